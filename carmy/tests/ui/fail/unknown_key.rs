// A key like no known one: the error lists them all.
use carmy::prelude::*;

#[tool(effect = "read", retries = 3)]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
