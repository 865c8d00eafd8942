// `complete` names a completer for each argument: `complete(order_id = order_ids)`.
use carmy::prelude::*;
use carmy::Completions;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    order_id: String,
}

async fn order_ids(typed: &str) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(typed, ["ord-1001"]))
}

#[prompt(complete = order_ids)]
async fn review_order(input: Review) -> Result<String, AgentError> {
    Ok(format!("Review order {}.", input.order_id))
}

fn main() {
    let _ = Carmy::new().prompt(review_order).build();
    let _ = order_ids;
}
