//! Every kind of parameter, in odd orders and with odd patterns.

use std::sync::Arc;

use carmy::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct SearchInput {
    query: String,
    limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
struct SearchOutput {
    skus: Vec<String>,
}

struct Db;
struct Cache;

/// State first, the context in the middle, a destructured input last.
#[tool(effect = "read")]
async fn search(
    db: State<Db>,
    ctx: &Context,
    SearchInput { query, .. }: SearchInput,
    cache: carmy::State<Arc<Cache>>,
) -> Result<SearchOutput, AgentError> {
    let _ = (db, ctx, cache);
    Ok(SearchOutput { skus: vec![query] })
}

/// The context by value and a `mut` input.
#[tool(effect = "write")]
async fn reindex(ctx: carmy::Context, mut input: SearchInput) -> Result<u32, AgentError> {
    input.limit.get_or_insert(10);
    let _ = ctx;
    Ok(input.limit.unwrap_or_default())
}

/// Only state, an elided-lifetime context and `'_`.
#[tool(effect = "none")]
async fn stats(_: State<Db>, _ctx: &'_ Context, _: State<Cache>) -> Result<u32, AgentError> {
    Ok(0)
}

async fn direct_calls() -> Result<(), AgentError> {
    let ctx = Context::new();
    let input = || SearchInput {
        query: "tea".into(),
        limit: None,
    };
    let cache = || State::new(Arc::new(Cache));

    let boxed: SearchOutput = search(State::new(Db), &ctx, input(), cache()).await?;
    let unboxed: SearchOutput = search::call(State::new(Db), &ctx, input(), cache()).await?;
    let _ = (boxed, unboxed);

    let _: u32 = reindex(ctx.clone(), input()).await?;
    let _: u32 = reindex::call(ctx.clone(), input()).await?;
    let _: u32 = stats(State::new(Db), &ctx, State::new(Cache)).await?;
    let _: u32 = stats::call(State::new(Db), &ctx, State::new(Cache)).await?;
    Ok(())
}

fn main() {
    Carmy::new()
        .tool(search)
        .tool(reindex)
        .tool(stats)
        .state(Db)
        .state(Cache)
        .state(Arc::new(Cache))
        .build()
        .unwrap();
    let _ = direct_calls();
}
