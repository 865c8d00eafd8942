use carmy::prelude::*;

#[tool(effect = "write", parallel_safe)]
async fn save(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
