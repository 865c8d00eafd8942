use carmy::prelude::*;

#[tool(effect = "reed")]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
