use carmy::prelude::*;

#[resource(uri = "shop://policies/returns")]
fn returns() -> Result<String, AgentError> {
    Ok("Within 30 days.".into())
}

fn main() {}
