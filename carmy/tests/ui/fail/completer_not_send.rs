// A completer's future is `Send`: the runtime may complete on any thread.
use std::rc::Rc;

use carmy::prelude::*;
use carmy::Completions;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    order_id: String,
}

async fn order_ids(typed: &str) -> Result<Completions, AgentError> {
    let cached = Rc::new(vec!["ord-1001"]);
    tokio::task::yield_now().await;
    Ok(Completions::starting_with(typed, cached.iter().copied()))
}

#[prompt(complete(order_id = order_ids))]
async fn review_order(input: Review) -> Result<String, AgentError> {
    Ok(format!("Review order {}.", input.order_id))
}

fn main() {
    let _ = Carmy::new().prompt(review_order).build();
}
