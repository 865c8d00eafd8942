use carmy::prelude::*;

#[tool(effect = "read")]
async fn whoami(ctx: &Context, again: Context) -> Result<(), AgentError> {
    let _ = (ctx, again);
    Ok(())
}

// The tool still exists, so registering it adds no errors.
fn main() {
    let _ = Carmy::new().tool(whoami).build();
}
