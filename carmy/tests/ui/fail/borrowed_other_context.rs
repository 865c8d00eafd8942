// A borrowed `Context` from elsewhere (say, a tracing crate's) is taken for Carmy's: one error,
// on the type behind the reference.
use carmy::prelude::{AgentError, Carmy, tool};

mod other {
    pub struct Context;
}

#[tool(effect = "read")]
async fn whoami(ctx: &other::Context) -> Result<(), AgentError> {
    let _ = ctx;
    Ok(())
}

fn main() {
    let _ = Carmy::new().tool(whoami).build();
}
