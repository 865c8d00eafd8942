use carmy::prelude::*;

#[tool(effect = "read", name = "search products")]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
