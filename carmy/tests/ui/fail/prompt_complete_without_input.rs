// Without an input a prompt takes no argument, so it has none to complete.
use carmy::prelude::*;
use carmy::Completions;

async fn order_ids(typed: &str) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(typed, ["ord-1001"]))
}

#[prompt(complete(order_id = order_ids))]
async fn review_last_order(ctx: &Context) -> Result<String, AgentError> {
    Ok(format!("Review the last order of {}.", ctx.principal().unwrap_or("the caller")))
}

// The prompt still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().prompt(review_last_order).build();
}
