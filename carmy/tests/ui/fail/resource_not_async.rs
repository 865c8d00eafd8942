use carmy::prelude::*;

#[resource(uri = "shop://policies/returns")]
fn returns() -> Result<String, AgentError> {
    Ok("Within 30 days.".into())
}

// The resource still exists, so registering and calling it add no errors.
fn main() {
    let _ = Carmy::new().resource(returns).build();
    let _ = returns();
}
