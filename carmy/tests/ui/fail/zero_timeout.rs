use carmy::prelude::*;

#[tool(effect = "read", timeout = "0s")]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
