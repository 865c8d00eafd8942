//! No input means `NoInput`; `()` is a valid output.

use carmy::prelude::*;

/// Nothing in, nothing out.
#[tool(effect = "none")]
async fn ping() -> Result<(), AgentError> {
    Ok(())
}

/// Only the context.
#[tool(effect = "destructive")]
async fn purge(ctx: &Context) -> Result<(), AgentError> {
    let _ = ctx;
    Ok(())
}

fn assert_input<T: carmy::catalog::Tool<Input = NoInput>>(_: T) {}

async fn direct_calls() -> Result<(), AgentError> {
    ping().await?;
    ping::call().await?;
    purge(&Context::new()).await?;
    purge::call(&Context::new()).await
}

fn main() {
    assert_input(ping);
    assert_input(purge);
    Carmy::new().tool(ping).tool(purge).build().unwrap();
    let _ = direct_calls();
}
