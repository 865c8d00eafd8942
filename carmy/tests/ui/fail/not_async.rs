use carmy::prelude::*;

#[tool(effect = "read")]
fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

// The tool still exists, so registering and calling it add no errors.
fn main() {
    let _ = Carmy::new().tool(search).build();
    let _ = search("x".to_owned());
}
