// An effect close to a known one: the error suggests it.
use carmy::prelude::*;

#[tool(effect = "reed")]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

// The tool still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().tool(search).build();
    let _ = search("x".to_owned());
}
