use carmy::prelude::*;

#[tool(effect = "read")]
async fn search(query: String, limit: u32) -> Result<String, AgentError> {
    let _ = limit;
    Ok(query)
}

fn main() {}
