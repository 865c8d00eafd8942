use carmy::prelude::*;

#[tool(effect = "destructive", confirmation = "maybe")]
async fn purge() -> Result<(), AgentError> {
    Ok(())
}

fn main() {}
