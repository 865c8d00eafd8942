use carmy::prelude::*;

#[tool(effect = "reed", idempotent = "yes", timeout = "soon", colour = "red")]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
