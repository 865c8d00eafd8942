use carmy::prelude::*;

#[tool(effect = "read")]
async fn search(query: impl Into<String>) -> Result<String, AgentError> {
    Ok(query.into())
}

fn main() {}
