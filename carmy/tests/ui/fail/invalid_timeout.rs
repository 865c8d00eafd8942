use carmy::prelude::*;

#[tool(effect = "read", timeout = "30")]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
