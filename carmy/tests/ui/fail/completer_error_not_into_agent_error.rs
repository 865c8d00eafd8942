// A completer's error converts into `AgentError`, as a prompt's does.
use carmy::prelude::*;
use carmy::Completions;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    order_id: String,
}

#[derive(Debug)]
struct DbError;

async fn order_ids(typed: &str) -> Result<Completions, DbError> {
    Ok(Completions::starting_with(typed, ["ord-1001"]))
}

#[prompt(complete(order_id = order_ids))]
async fn review_order(input: Review) -> Result<String, AgentError> {
    Ok(format!("Review order {}.", input.order_id))
}

fn main() {
    let _ = Carmy::new().prompt(review_order).build();
}
