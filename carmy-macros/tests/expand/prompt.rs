// A prompt: its arguments are the fields of `Review` (checked at `build()`), the context and
// shared state are injected, and a `String` is one user message.
use carmy::prelude::*;

/// Ask for a review of one order.
#[prompt(title = "Review an order", timeout = "5s")]
async fn review_order(input: Review, ctx: &Context, orders: State<Orders>) -> Result<String, AgentError> {
    let order = orders.get(&input.order_id)?;
    let reader = ctx.principal().unwrap_or("a customer");
    Ok(format!("Review order {} for {reader}: {order:?}", input.order_id))
}
