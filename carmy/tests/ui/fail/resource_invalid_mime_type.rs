use carmy::prelude::*;

#[resource(uri = "shop://policies/returns", mime_type = "markdown")]
async fn returns() -> Result<String, AgentError> {
    Ok("Within 30 days.".into())
}

// The resource still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().resource(returns).build();
}
