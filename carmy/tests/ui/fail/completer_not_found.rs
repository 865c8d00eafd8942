// The completer's path resolves where the prompt is written.
use carmy::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    order_id: String,
}

#[prompt(complete(order_id = order_idz))]
async fn review_order(input: Review) -> Result<String, AgentError> {
    Ok(format!("Review order {}.", input.order_id))
}

fn main() {
    let _ = Carmy::new().prompt(review_order).build();
}
