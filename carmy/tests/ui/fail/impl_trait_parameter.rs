use carmy::prelude::*;

#[tool(effect = "read")]
async fn search(query: impl Into<String>) -> Result<String, AgentError> {
    Ok(query.into())
}

// The tool still exists, so registering it adds no errors.
fn main() {
    let _ = Carmy::new().tool(search).build();
}
