// `crate = "..."` replaces `::carmy` in every generated path, for a renamed dependency.
use my_carmy::{AgentError, State};

#[my_carmy::tool(effect = "write", crate = "::my_carmy")]
async fn restock(sku: String, stock: State<Stock>) -> Result<u32, AgentError> {
    Ok(stock.add(&sku, 10))
}
