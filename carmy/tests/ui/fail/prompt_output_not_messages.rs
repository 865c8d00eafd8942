// A prompt returns Carmy's messages: a type of one's own, even one named `Message` (a serde
// type, as a tool would return), is not one.
//
// The name is also what keeps this `.stderr` stable: rustc prints a type by its bare name only
// while no other crate in the build has one of that name, and `cargo test --workspace` brings
// in crates with a `Message` that `cargo test -p carmy` does not. With one here, Carmy's is
// always `carmy::Message`.
use carmy::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    order_id: String,
}

#[derive(serde::Serialize)]
struct Message {
    text: String,
}

#[prompt]
async fn review_order(input: Review) -> Result<Message, AgentError> {
    Ok(Message { text: format!("Review order {}.", input.order_id) })
}

fn main() {
    let _ = Carmy::new().prompt(review_order).build();
}
