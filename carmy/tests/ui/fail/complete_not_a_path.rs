// A completer is named by its path, not quoted and not written inline.
use carmy::prelude::*;
use carmy::Completions;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    order_id: String,
    focus: Option<String>,
}

async fn order_ids(typed: &str) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(typed, ["ord-1001"]))
}

#[prompt(complete(order_id = "order_ids", focus = |typed: &str| async move { typed }))]
async fn review_order(input: Review) -> Result<String, AgentError> {
    Ok(format!("Review order {} for {:?}.", input.order_id, input.focus))
}

fn main() {
    let _ = Carmy::new().prompt(review_order).build();
    let _ = order_ids;
}
