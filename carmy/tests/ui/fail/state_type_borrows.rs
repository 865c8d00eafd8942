// Shared state lives as long as the runtime: its type cannot hold a borrow.
use carmy::prelude::*;

struct Prefix<'a>(&'a str);

#[tool(effect = "read")]
async fn greet(prefix: State<Prefix<'_>>) -> Result<String, AgentError> {
    Ok(prefix.0.to_owned())
}

// The tool still exists, so registering it adds no errors.
fn main() {
    let _ = Carmy::new().tool(greet).build();
}
