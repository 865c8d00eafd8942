use std::rc::Rc;

use carmy::prelude::*;

async fn elsewhere() {}

#[tool(effect = "read")]
async fn search(query: String) -> Result<String, AgentError> {
    let shared = Rc::new(query);
    elsewhere().await;
    Ok(shared.to_string())
}

fn main() {
    let _ = Carmy::new().tool(search).build();
}
