use carmy::prelude::*;

#[tool(effect = "read", idempotnet)]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
