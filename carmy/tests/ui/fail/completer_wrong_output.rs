// A completer returns `Completions` or a `Vec<String>` in a `Result`, not a `Vec<u32>`.
use carmy::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    order_id: String,
}

async fn order_ids(_typed: &str) -> Result<Vec<u32>, AgentError> {
    Ok(vec![1001, 1002])
}

#[prompt(complete(order_id = order_ids))]
async fn review_order(input: Review) -> Result<String, AgentError> {
    Ok(format!("Review order {}.", input.order_id))
}

fn main() {
    let _ = Carmy::new().prompt(review_order).build();
}
