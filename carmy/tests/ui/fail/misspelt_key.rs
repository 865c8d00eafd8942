// A key close to a known one: the error suggests it.
use carmy::prelude::*;

#[tool(effect = "read", idempotnet)]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
