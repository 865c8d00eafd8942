// Completion declared next to the arguments: one completer per argument, by path, taking what
// the user typed (`&str`) or the whole `CompletionRequest`; names are checked to be distinct,
// and to be fields of `Review` at `build()`.
use carmy::prelude::*;
use carmy::{Message, Messages};

#[prompt(
    name = "orders.review",
    complete(order_id = order_ids, focus = completion::focuses)
)]
async fn review_order(input: Review) -> Result<Messages, ShopError> {
    let focus = input.focus.unwrap_or_else(|| "anything unusual".into());
    Ok(Messages::new()
        .with(Message::user(format!("Review order {} for {focus}.", input.order_id)))
        .with(Message::assistant("Looking at it.")))
}
