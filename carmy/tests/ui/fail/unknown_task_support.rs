use carmy::prelude::*;

#[tool(effect = "read", task = "sometimes")]
async fn report() -> Result<(), AgentError> {
    Ok(())
}

fn main() {}
