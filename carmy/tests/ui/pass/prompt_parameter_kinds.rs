//! Every kind of parameter on a prompt, in odd orders and with odd patterns.

use std::sync::Arc;

use carmy::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Review {
    order_id: String,
    focus: Option<String>,
}

struct Db;
struct Cache;

/// State first, the context in the middle, a destructured input last.
#[prompt]
async fn review_order(
    db: State<Db>,
    ctx: &Context,
    Review { order_id, focus }: Review,
    cache: carmy::State<Arc<Cache>>,
) -> Result<String, AgentError> {
    let _ = (db, ctx, cache);
    Ok(format!("Review {order_id} for {focus:?}."))
}

/// The context by value and a `mut` input.
#[prompt(name = "review_order.short")]
async fn review_short(ctx: carmy::Context, mut input: Review) -> Result<String, AgentError> {
    input.order_id.push('!');
    let _ = ctx;
    Ok(input.order_id)
}

/// No parameter at all: a prompt without arguments.
#[prompt]
async fn greet() -> Result<String, AgentError> {
    Ok("Say hello.".into())
}

fn main() {
    Carmy::new()
        .prompt(review_order)
        .prompt(review_short)
        .prompt(greet)
        .state(Db)
        .state(Arc::new(Cache))
        .build()
        .unwrap();
}
