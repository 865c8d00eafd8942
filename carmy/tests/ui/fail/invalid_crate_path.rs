use carmy::prelude::*;

#[tool(effect = "read", crate = "my carmy")]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
