//! Every kind of parameter on a resource, in odd orders and with odd patterns.

use std::sync::Arc;

use carmy::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct LineRef {
    order: String,
    line: String,
}

struct Db;
struct Cache;

/// State first, the context in the middle, a destructured input last.
#[resource(uri = "shop://orders/{order}/lines/{line}")]
async fn order_line(
    db: State<Db>,
    ctx: &Context,
    LineRef { order, line }: LineRef,
    cache: carmy::State<Arc<Cache>>,
) -> Result<String, AgentError> {
    let _ = (db, ctx, cache);
    Ok(format!("{order}/{line}"))
}

/// The context by value and a `mut` input.
#[resource(uri = "shop://orders/{order}/notes/{line}")]
async fn notes(ctx: carmy::Context, mut input: LineRef) -> Result<String, AgentError> {
    input.line.push('!');
    let _ = ctx;
    Ok(input.line)
}

/// A fixed URI with only state and an elided-lifetime context.
#[resource(uri = "shop://stats")]
async fn stats(_: State<Db>, _ctx: &'_ Context, _: State<Cache>) -> Result<String, AgentError> {
    Ok(String::new())
}

async fn direct_calls() -> Result<(), AgentError> {
    let ctx = Context::new();
    let input = || LineRef {
        order: "ord-1".into(),
        line: "2".into(),
    };
    let cache = || State::new(Arc::new(Cache));

    let boxed = order_line(State::new(Db), &ctx, input(), cache()).await?;
    let unboxed = order_line::call(State::new(Db), &ctx, input(), cache()).await?;
    assert_eq!(boxed, unboxed);

    let _: String = notes(ctx.clone(), input()).await?;
    let _: String = notes::call(ctx.clone(), input()).await?;
    let _: String = stats(State::new(Db), &ctx, State::new(Cache)).await?;
    let _: String = stats::call(State::new(Db), &ctx, State::new(Cache)).await?;
    Ok(())
}

fn main() {
    Carmy::new()
        .resource(order_line)
        .resource(notes)
        .resource(stats)
        .state(Db)
        .state(Cache)
        .state(Arc::new(Cache))
        .build()
        .unwrap();
    let _ = direct_calls();
}
