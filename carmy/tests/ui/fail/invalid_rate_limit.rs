use carmy::prelude::*;

#[tool(effect = "write", rate_limit = "30 per minute")]
async fn place(query: String) -> Result<String, AgentError> {
    Ok(query)
}

#[tool(effect = "write", rate_limit = "0/min")]
async fn never(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
