use carmy::prelude::*;

#[prompt(name = "review order")]
async fn review_order() -> Result<String, AgentError> {
    Ok("Review the last order.".into())
}

// The prompt still expands, so using it adds no errors.
fn main() {
    let _ = Carmy::new().prompt(review_order).build();
}
