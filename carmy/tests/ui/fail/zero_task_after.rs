use carmy::prelude::*;

#[tool(effect = "read", task = "optional", task_after = "0ms")]
async fn report() -> Result<(), AgentError> {
    Ok(())
}

fn main() {}
