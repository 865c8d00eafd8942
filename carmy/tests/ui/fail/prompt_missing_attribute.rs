// A function without `#[prompt]` passed to `Carmy::prompt`.
use carmy::prelude::*;

async fn greet() -> Result<String, AgentError> {
    Ok("Say hello.".into())
}

fn main() {
    let _ = Carmy::new().prompt(greet).build();
}
