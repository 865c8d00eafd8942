use carmy::prelude::*;

#[prompt]
fn greet() -> Result<String, AgentError> {
    Ok("Say hello.".into())
}

fn main() {}
