// A prompt's input is decoded afresh from its arguments for each render: it cannot borrow.
use carmy::prelude::*;

#[prompt]
async fn greet(name: &str) -> Result<String, AgentError> {
    Ok(format!("Say hello to {name}."))
}

fn main() {}
