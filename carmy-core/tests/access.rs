//! Access rules: a call of a tool the context's rules leave out is refused with
//! `TOOL_NOT_ALLOWED` before anything else is looked at, recorded, and never runs.

mod common;

use carmy_core::{Access, Context, ExecutionStatus, Request};
use common::Shop;
use serde_json::json;

fn order(tool: &str, context: Context) -> Request {
    Request::new(tool, json!({ "order_id": "ord-1" })).context(context)
}

fn reader() -> Context {
    Context::new()
        .with_principal("auditor")
        .with_access("effect:read".parse().unwrap())
}

#[tokio::test]
async fn a_tool_outside_the_rules_is_refused_recorded_and_never_runs() {
    let shop = Shop::new();
    let runtime = shop.carmy().build().unwrap();
    let refused = runtime.execute(order("place_order", reader())).await;
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    let error = refused.error().unwrap();
    assert_eq!(error.code(), "TOOL_NOT_ALLOWED");
    assert_eq!(error.category(), carmy_core::ErrorCategory::Permission);
    assert_eq!(error.details().unwrap()["tool"], "place_order");
    assert_eq!(shop.places.started(), 0);
    let record = runtime.execution(&refused.execution_id).expect("recorded");
    assert_eq!(record.error_code.as_deref(), Some("TOOL_NOT_ALLOWED"));

    // Refused before its arguments are read: nothing about the tool's input leaks.
    let bad = Request::new("place_order", json!({ "nope": 1 })).context(reader());
    assert_eq!(
        runtime.execute(bad).await.unwrap_error_code(),
        "TOOL_NOT_ALLOWED"
    );

    // What the rules allow runs as before.
    let read = runtime.execute(order("get_order", reader())).await;
    assert_eq!(read.status, ExecutionStatus::Succeeded);
    assert_eq!(shop.gets.started(), 1);
}

#[tokio::test]
async fn restrictions_add_up_and_a_later_one_never_widens() {
    let shop = Shop::new();
    let runtime = shop.carmy().build().unwrap();
    let server: Access = "*_order".parse().unwrap();
    let token: Access = "get_order, effect:write".parse().unwrap();
    let context = Context::new().with_access(server).with_access(token);
    assert!(
        runtime
            .execute(order("get_order", context.clone()))
            .await
            .is_ok()
    );
    assert!(
        runtime
            .execute(order("place_order", context.clone()))
            .await
            .is_ok()
    );
    // Allowed by the server's pattern, but not by the token's list.
    let cancel = order(
        "cancel_order",
        context.clone().with_grant("confirm:cancel_order"),
    );
    assert_eq!(
        runtime.execute(cancel).await.unwrap_error_code(),
        "TOOL_NOT_ALLOWED"
    );

    let catalog = runtime.catalog();
    let visible: Vec<&str> = catalog
        .iter()
        .filter(|tool| context.allows_tool(tool))
        .map(|tool| tool.name())
        .collect();
    assert_eq!(visible, ["place_order", "get_order"]);
    assert!(context.is_restricted() && !Context::new().is_restricted());
}

#[tokio::test]
async fn an_unknown_tool_is_still_not_found() {
    let runtime = Shop::new().carmy().build().unwrap();
    let outcome = runtime.execute(order("nope", reader())).await;
    assert_eq!(outcome.unwrap_error_code(), "TOOL_NOT_FOUND");
}
