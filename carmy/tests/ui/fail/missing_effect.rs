use carmy::prelude::*;

#[tool(idempotent)]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
