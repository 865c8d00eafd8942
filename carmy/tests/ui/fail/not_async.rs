use carmy::prelude::*;

#[tool(effect = "read")]
fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {}
