use carmy::prelude::*;

/// Sends an email: its effects are outside the store, so it cannot be transactional.
#[tool(effect = "external_write", transactional)]
async fn send_email(to: String) -> Result<String, AgentError> {
    Ok(to)
}

// The tool still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().tool(send_email).build();
    let _ = send_email("x".to_owned());
}
