// A function without `#[resource]` passed to `Carmy::resource`.
use carmy::prelude::*;

async fn returns() -> Result<String, AgentError> {
    Ok("Within 30 days.".into())
}

fn main() {
    let _ = Carmy::new().resource(returns).build();
}
