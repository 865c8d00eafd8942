use carmy::prelude::*;

struct SearchOutput {
    skus: Vec<String>,
}

#[tool(effect = "read")]
async fn search(query: String) -> Result<SearchOutput, AgentError> {
    Ok(SearchOutput { skus: vec![query] })
}

fn main() {
    let _ = Carmy::new().tool(search).build();
}
