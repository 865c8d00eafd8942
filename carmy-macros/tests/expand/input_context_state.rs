// The typical tool: an input, the borrowed context and shared state, in any order.
use carmy::prelude::*;

/// Search the product catalog.
#[tool(effect = "read", idempotent)]
pub async fn search(
    input: SearchInput,
    ctx: &Context,
    db: State<Db>,
) -> Result<SearchOutput, AgentError> {
    let skus = db.search(&input.query, ctx.principal());
    Ok(SearchOutput { skus })
}
