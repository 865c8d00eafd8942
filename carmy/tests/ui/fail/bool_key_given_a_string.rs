use carmy::prelude::*;

#[tool(effect = "write", idempotent = "yes")]
async fn save(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
