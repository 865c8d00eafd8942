use carmy::prelude::*;

#[tool(effect = "read")]
async fn café(order: String) -> Result<String, AgentError> {
    Ok(order)
}

fn main() {}
