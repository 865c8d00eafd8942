use carmy::prelude::*;

#[resource(name = "returns", mime_type = "text/markdown")]
async fn returns() -> Result<String, AgentError> {
    Ok("Within 30 days.".into())
}

// The resource still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().resource(returns).build();
}
