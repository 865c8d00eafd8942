use carmy::prelude::*;

#[tool(effect = "read", idempotent, effect = "write")]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
