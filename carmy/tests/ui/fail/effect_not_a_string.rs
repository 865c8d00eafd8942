use carmy::prelude::*;

#[tool(effect = read)]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
