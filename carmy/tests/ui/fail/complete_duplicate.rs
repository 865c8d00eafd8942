// One completer per argument: which one would run?
use carmy::prelude::*;
use carmy::Completions;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    order_id: String,
}

async fn order_ids(typed: &str) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(typed, ["ord-1001"]))
}

async fn recent_order_ids(typed: &str) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(typed, ["ord-2001"]))
}

#[prompt(complete(order_id = order_ids, order_id = recent_order_ids))]
async fn review_order(input: Review) -> Result<String, AgentError> {
    Ok(format!("Review order {}.", input.order_id))
}

fn main() {
    let _ = Carmy::new().prompt(review_order).build();
    let _ = recent_order_ids;
}
