// An effect like no known one: the error lists them all.
use carmy::prelude::*;

#[tool(effect = "mutate")]
async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

// The tool still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().tool(search).build();
    let _ = search("x".to_owned());
}
