use carmy::prelude::*;

#[tool(effect = "read")]
async fn whoami(ctx: &Context, again: Context) -> Result<(), AgentError> {
    let _ = (ctx, again);
    Ok(())
}

fn main() {}
