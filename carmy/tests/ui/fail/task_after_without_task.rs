use carmy::prelude::*;

#[tool(effect = "read", task_after = "500ms")]
async fn report() -> Result<(), AgentError> {
    Ok(())
}

fn main() {}
