// Every attribute key; the context by value; an error type of one's own; `cfg` and another
// attribute on the function.
use carmy::prelude::*;

/// Ignored: `description` wins over the doc comment.
#[tool(
    effect = "destructive",
    idempotent,
    parallel_safe = false,
    confirmation = "required",
    task = "optional",
    task_after = "2s",
    name = "orders.cancel",
    title = "Cancel an order",
    description = "Cancels an order for good.",
    timeout = "1.5s",
    crate = "::carmy"
)]
#[cfg(feature = "orders")]
#[tracing::instrument(skip(ctx))]
pub(crate) async fn cancel_order(order: OrderId, ctx: Context) -> Result<(), ShopError> {
    orders::cancel(order, ctx.principal()).await
}
