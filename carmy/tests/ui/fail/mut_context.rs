use carmy::prelude::*;

#[tool(effect = "read")]
async fn whoami(ctx: &mut Context) -> Result<(), AgentError> {
    let _ = ctx;
    Ok(())
}

fn main() {}
