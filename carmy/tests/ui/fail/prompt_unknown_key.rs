// `mime_type` is a resource's key: a prompt renders messages, which carry their own types.
use carmy::prelude::*;

#[prompt(title = "Greet", mime_type = "text/plain")]
async fn greet() -> Result<String, AgentError> {
    Ok("Say hello.".into())
}

// The prompt still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().prompt(greet).build();
}
