// A prompt's input is decoded afresh from its arguments for each render: it cannot borrow.
use carmy::prelude::*;

#[prompt]
async fn greet(name: &str) -> Result<String, AgentError> {
    Ok(format!("Say hello to {name}."))
}

// The prompt still exists, so registering and calling it add no errors.
fn main() {
    let _ = Carmy::new().prompt(greet).build();
    let _ = greet("Ada");
}
