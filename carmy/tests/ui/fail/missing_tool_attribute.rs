// A function without `#[tool]` passed to `Carmy::tool`.
use carmy::prelude::*;

async fn search(query: String) -> Result<String, AgentError> {
    Ok(query)
}

fn main() {
    let _ = Carmy::new().tool(search).build();
}
