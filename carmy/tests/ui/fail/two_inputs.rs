use carmy::prelude::*;

#[tool(effect = "read")]
async fn search(query: String, limit: u32) -> Result<String, AgentError> {
    let _ = limit;
    Ok(query)
}

// The tool still exists, so registering and calling it add no errors.
fn main() {
    let _ = Carmy::new().tool(search).build();
    let _ = search("x".to_owned(), 1);
}
