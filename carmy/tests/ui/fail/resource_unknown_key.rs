// `effect` is a tool's key: a resource reads, and says nothing about effects.
use carmy::prelude::*;

#[resource(uri = "shop://policies/returns", effect = "read")]
async fn returns() -> Result<String, AgentError> {
    Ok("Within 30 days.".into())
}

fn main() {
    let _ = Carmy::new().resource(returns).build();
}
