use carmy::prelude::*;

#[tool(effect = "read")]
async fn search(query: &str) -> Result<String, AgentError> {
    Ok(query.to_owned())
}

fn main() {}
