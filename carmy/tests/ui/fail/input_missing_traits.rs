use carmy::prelude::*;

struct SearchInput {
    query: String,
}

#[tool(effect = "read")]
async fn search(input: SearchInput) -> Result<String, AgentError> {
    Ok(input.query)
}

fn main() {
    let _ = Carmy::new().tool(search).build();
}
