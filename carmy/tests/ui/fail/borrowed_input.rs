use carmy::prelude::*;

#[tool(effect = "read")]
async fn search(query: &str) -> Result<String, AgentError> {
    Ok(query.to_owned())
}

// The tool still exists, so registering it adds no errors.
fn main() {
    let _ = Carmy::new().tool(search).build();
}
