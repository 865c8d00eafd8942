use carmy::prelude::*;

#[tool(effect = "read")]
async fn café(order: String) -> Result<String, AgentError> {
    Ok(order)
}

// The tool still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().tool(café).build();
    let _ = café("x".to_owned());
}
