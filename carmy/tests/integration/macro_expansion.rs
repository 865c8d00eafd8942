//! What `#[tool]` generates, observed at run time: the metadata in the catalog, the arguments
//! each parameter receives through the runtime, error conversion, and direct calls.

use std::{sync::Arc, time::Duration};

use carmy::{
    catalog::{BuildProblem, Confirmation, Tool},
    prelude::*,
    testing::TestHost,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
struct SearchInput {
    query: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct SearchOutput {
    skus: Vec<String>,
    principal: Option<String>,
}

#[derive(Debug)]
struct Catalog {
    skus: Vec<&'static str>,
}

/// Search the product catalog.
///
/// Matches SKUs by prefix.
#[tool(effect = "read", idempotent)]
async fn search(
    catalog: State<Catalog>,
    SearchInput { query }: SearchInput,
    ctx: &Context,
) -> Result<SearchOutput, AgentError> {
    let skus = catalog.skus.iter().filter(|sku| sku.starts_with(&query));
    Ok(SearchOutput {
        skus: skus.map(|sku| (*sku).to_owned()).collect(),
        principal: ctx.principal().map(str::to_owned),
    })
}

/// Not this text.
#[tool(
    effect = "destructive",
    name = "orders.cancel",
    title = "Cancel an order",
    description = "Cancels an order for good.",
    confirmation = "none",
    parallel_safe = true,
    timeout = "2s"
)]
async fn cancel_order(ctx: Context) -> Result<(), AgentError> {
    let _ = ctx;
    Ok(())
}

#[derive(Debug)]
enum ShopError {
    OutOfStock(String),
}

impl From<ShopError> for AgentError {
    fn from(error: ShopError) -> Self {
        match error {
            ShopError::OutOfStock(sku) => {
                AgentError::conflict("OUT_OF_STOCK", format!("{sku} is out of stock"))
            }
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct Reservation {
    sku: String,
}

#[tool(effect = "write")]
async fn reserve(input: Reservation) -> Result<u32, ShopError> {
    Err(ShopError::OutOfStock(input.sku))
}

#[derive(Deserialize, JsonSchema)]
struct Countdown {
    from: u32,
}

/// Recursion goes through the boxed direct call, which is what makes it compile.
#[tool(effect = "none")]
async fn countdown(input: Countdown) -> Result<u32, AgentError> {
    match input.from {
        0 => Ok(0),
        n => Ok(1 + countdown(Countdown { from: n - 1 }).await?),
    }
}

#[tool(effect = "none")]
async fn ping() -> Result<(), AgentError> {
    Ok(())
}

fn catalog() -> Catalog {
    Catalog {
        skus: vec!["tea-green", "tea-black", "coffee"],
    }
}

fn host() -> TestHost {
    let runtime = Carmy::new()
        .tool(search)
        .tool(cancel_order)
        .tool(reserve)
        .tool(countdown)
        .tool(ping)
        .state(catalog())
        .build()
        .unwrap();
    TestHost::new(runtime)
}

#[test]
fn metadata_comes_from_the_attribute_and_the_doc_comment() {
    let host = host();
    let catalog = host.runtime().catalog();

    // `let search = ..` would be a pattern matching the unit struct `search`.
    let entry = catalog.get("search").unwrap();
    assert_eq!(
        entry.description(),
        "Search the product catalog.\n\nMatches SKUs by prefix."
    );
    assert_eq!(entry.title(), None);
    assert_eq!(entry.effect(), Effect::Read);
    assert!(entry.idempotent());
    assert!(entry.parallel_safe(), "read tools default to parallel-safe");

    let entry = catalog.get("orders.cancel").unwrap();
    assert_eq!(entry.title(), Some("Cancel an order"));
    assert_eq!(entry.description(), "Cancels an order for good.");
    assert_eq!(entry.effect(), Effect::Destructive);
    assert!(!entry.idempotent());
    assert!(entry.parallel_safe());
    assert_eq!(entry.confirmation(), Confirmation::None);
    assert_eq!(entry.timeout(), Duration::from_secs(2));

    let entry = catalog.get("reserve").unwrap();
    assert_eq!(entry.description(), "");
    assert!(!entry.parallel_safe(), "write tools default to serial");
}

#[test]
fn the_spec_is_a_const() {
    const NAME: &str = <cancel_order as Tool>::SPEC.name();
    assert_eq!(NAME, "orders.cancel");
}

#[test]
fn a_missing_state_is_reported_at_build() {
    let error = Carmy::new().tool(search).build().unwrap_err();
    assert!(
        matches!(
            error.problems(),
            [BuildProblem::MissingState { type_name, tools, .. }]
                if tools == &["search"] && type_name.ends_with("Catalog")
        ),
        "{error}"
    );
}

#[tokio::test]
async fn the_runtime_passes_input_state_and_context() {
    let host = host().with_principal("alice");
    let outcome = host.call("search", json!({ "query": "tea" })).await;
    assert_eq!(
        outcome.unwrap_output::<SearchOutput>(),
        SearchOutput {
            skus: vec!["tea-green".into(), "tea-black".into()],
            principal: Some("alice".into()),
        }
    );
}

#[tokio::test]
async fn no_input_takes_the_empty_object() {
    let host = host();
    assert!(host.call("ping", json!({})).await.is_ok());
    let outcome = host.call("ping", json!({ "unexpected": 1 })).await;
    assert_eq!(outcome.unwrap_error_code(), carmy::codes::INVALID_ARGUMENTS);
}

#[tokio::test]
async fn errors_convert_into_agent_errors() {
    let outcome = host().call("reserve", json!({ "sku": "tea-green" })).await;
    assert_eq!(outcome.unwrap_error_code(), "OUT_OF_STOCK");
    assert_eq!(
        outcome.error().unwrap().message(),
        "tea-green is out of stock"
    );
}

#[tokio::test]
async fn tools_can_be_called_directly() {
    let ctx = Context::new().with_principal("bob");
    let state = || State::from_arc(Arc::new(catalog()));
    let input = || SearchInput {
        query: "coffee".into(),
    };

    let boxed = search(state(), input(), &ctx).await.unwrap();
    let unboxed = search::call(state(), input(), &ctx).await.unwrap();
    assert_eq!(boxed, unboxed);
    assert_eq!(boxed.skus, ["coffee"]);
    assert_eq!(boxed.principal.as_deref(), Some("bob"));

    assert!(matches!(
        reserve::call(Reservation { sku: "x".into() }).await,
        Err(ShopError::OutOfStock(_))
    ));
    assert_eq!(countdown(Countdown { from: 3 }).await.unwrap(), 3);
    assert_eq!(
        host()
            .call("countdown", json!({ "from": 5 }))
            .await
            .unwrap_output::<u32>(),
        5
    );
    cancel_order(Context::new()).await.unwrap();
}

#[tokio::test]
async fn the_direct_call_future_is_send() {
    fn assert_send<T: Send>(value: T) -> T {
        value
    }
    let ctx = Context::new();
    let future = assert_send(search(
        State::new(catalog()),
        SearchInput { query: "t".into() },
        &ctx,
    ));
    assert_eq!(future.await.unwrap().skus.len(), 2);
    tokio::spawn(ping()).await.unwrap().unwrap();
}

#[test]
fn the_tool_is_a_copyable_unit_value() {
    let tool = search;
    let copy = tool;
    assert_eq!(format!("{tool:?} {copy:?}"), "search search");
    let _: search = Default::default();
}
