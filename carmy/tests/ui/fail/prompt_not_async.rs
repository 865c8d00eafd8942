use carmy::prelude::*;

#[prompt]
fn greet() -> Result<String, AgentError> {
    Ok("Say hello.".into())
}

// The prompt still exists, so registering it adds no errors.
fn main() {
    let _ = Carmy::new().prompt(greet).build();
}
