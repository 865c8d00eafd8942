// One error per missing trait, each on the output's type (see the comment on `ToolInput` in
// carmy-core/src/tool.rs for why not one error with Carmy's advice).
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
