// A serde type is a tool's output, not a prompt's: a prompt returns messages.
use carmy::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    order_id: String,
}

#[derive(serde::Serialize)]
struct Summary {
    order_id: String,
}

#[prompt]
async fn review_order(input: Review) -> Result<Summary, AgentError> {
    Ok(Summary { order_id: input.order_id })
}

fn main() {
    let _ = Carmy::new().prompt(review_order).build();
}
