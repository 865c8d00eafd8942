//! Rate limits: a bucket per tool and principal, checked after capacity and before the tool's
//! turn. A call over the limit never runs, is recorded as rejected and leaves its request id
//! free; once the wait it was told is over, the same call goes through.

use crate::common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, Context, Effect, ExecutionStatus, Invocation, NoInput, RateLimit, Request, Tool,
    ToolSpec,
};
use common::Shop;
use serde_json::json;

/// A tool with a limit of its own, stricter than any default.
struct Ping(Arc<AtomicUsize>);

impl Tool for Ping {
    type Input = NoInput;
    type Output = usize;
    const SPEC: ToolSpec =
        ToolSpec::new("ping", Effect::None).rate_limit(RateLimit::per_hour(2).burst(1));

    async fn run(&self, _: NoInput, _: Invocation) -> Result<usize, AgentError> {
        Ok(self.0.fetch_add(1, Ordering::SeqCst) + 1)
    }
}

/// A tool exempt from the runtime's default.
struct Health;

impl Tool for Health {
    type Input = NoInput;
    type Output = &'static str;
    const SPEC: ToolSpec = ToolSpec::new("health", Effect::None).rate_limit(RateLimit::unlimited());

    async fn run(&self, _: NoInput, _: Invocation) -> Result<&'static str, AgentError> {
        Ok("ok")
    }
}

fn as_(principal: &str) -> Context {
    Context::new().with_principal(principal)
}

fn get(order: &str, principal: &str) -> Request {
    Request::new("get_order", json!({ "order_id": order })).context(as_(principal))
}

#[tokio::test]
async fn over_the_limit_a_call_is_refused_recorded_and_never_runs() {
    let shop = Shop::new();
    let runtime = shop
        .carmy()
        .rate_limit(RateLimit::per_hour(3).burst(2))
        .build()
        .unwrap();
    for order in ["ord-1", "ord-2"] {
        let admitted = runtime.execute(get(order, "alice")).await;
        assert_eq!(admitted.status, ExecutionStatus::Succeeded);
    }
    let refused = runtime.execute(get("ord-3", "alice")).await;
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    let error = refused.error().unwrap();
    assert_eq!(error.code(), "RATE_LIMITED");
    assert!(error.retryable());
    let details = error.details().unwrap();
    assert_eq!(details["tool"], "get_order");
    assert_eq!(details["requests"], 3);
    assert_eq!(details["period_ms"], 3_600_000);
    assert_eq!(details["burst"], 2);
    // One call back every 20 minutes.
    let wait = details["retry_after_ms"].as_u64().unwrap();
    assert!(wait > 1_190_000 && wait <= 1_200_000, "{wait}");
    assert!(
        error.message().contains("3/h (burst 2)"),
        "{}",
        error.message()
    );
    assert_eq!(shop.gets.started(), 2, "the refused call did not run");
    let record = runtime.execution(&refused.execution_id).expect("recorded");
    assert_eq!(record.status, ExecutionStatus::Rejected);
    assert_eq!(record.error_code.as_deref(), Some("RATE_LIMITED"));
}

#[tokio::test]
async fn buckets_are_per_principal_and_per_tool() {
    let shop = Shop::new();
    let runtime = shop
        .carmy()
        .rate_limit(RateLimit::per_hour(1))
        .build()
        .unwrap();
    assert!(runtime.execute(get("ord-1", "alice")).await.is_ok());
    assert_eq!(
        runtime
            .execute(get("ord-1", "alice"))
            .await
            .unwrap_error_code(),
        "RATE_LIMITED"
    );
    // Bob's bucket is his own; so is alice's bucket for another tool.
    assert!(runtime.execute(get("ord-1", "bob")).await.is_ok());
    let place = Request::new("place_order", json!({ "order_id": "ord-9" })).context(as_("alice"));
    assert!(runtime.execute(place).await.is_ok());
}

#[tokio::test]
async fn a_tool_s_own_limit_replaces_the_default_and_unlimited_exempts() {
    let pings = Arc::new(AtomicUsize::new(0));
    let runtime = carmy_core::Carmy::new()
        .tool(Ping(Arc::clone(&pings)))
        .tool(Health)
        .rate_limit(RateLimit::per_hour(100))
        .build()
        .unwrap();
    let ping = || Request::new("ping", json!({})).context(as_("alice"));
    assert!(runtime.execute(ping()).await.is_ok());
    assert_eq!(
        runtime.execute(ping()).await.unwrap_error_code(),
        "RATE_LIMITED"
    );
    assert_eq!(pings.load(Ordering::SeqCst), 1);
    for _ in 0..200 {
        let health = Request::new("health", json!({})).context(as_("alice"));
        assert!(runtime.execute(health).await.is_ok());
    }
    let catalog = runtime.catalog();
    assert_eq!(
        catalog.get("ping").unwrap().rate_limit(),
        RateLimit::per_hour(2).burst(1)
    );
    assert!(catalog.get("health").unwrap().rate_limit().is_unlimited());
}

#[tokio::test]
async fn a_refused_call_leaves_its_request_id_for_the_retry_after_the_wait() {
    let shop = Shop::new();
    // One call back every 50 ms (the limiter's clock is the system's: real time passes).
    let runtime = shop
        .carmy()
        .rate_limit(RateLimit::per_second(20).burst(1))
        .build()
        .unwrap();
    let place = || {
        Request::new("place_order", json!({ "order_id": "ord-1" }))
            .request_id("r-1")
            .context(as_("alice"))
    };
    let other = Request::new("place_order", json!({ "order_id": "ord-0" })).context(as_("alice"));
    assert!(runtime.execute(other).await.is_ok());
    let refused = runtime.execute(place()).await;
    assert_eq!(refused.unwrap_error_code(), "RATE_LIMITED");
    let wait = refused.error().unwrap().details().unwrap()["retry_after_ms"]
        .as_u64()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let retried = runtime.execute(place()).await;
    assert_eq!(retried.status, ExecutionStatus::Succeeded, "{retried:?}");
    assert_eq!(shop.places.started(), 2, "ord-0, then ord-1 once");
    // The id now holds the call that ran: sending it again replays, and takes no token.
    let replayed = runtime.execute(place()).await;
    assert_eq!(replayed.execution_id, retried.execution_id);
    assert_eq!(shop.places.started(), 2);
}

#[tokio::test]
async fn without_a_limit_nothing_is_counted() {
    let shop = Shop::new();
    let runtime = shop.carmy().build().unwrap();
    for i in 0..500 {
        let outcome = runtime.execute(get(&format!("ord-{i}"), "alice")).await;
        assert!(outcome.is_ok());
    }
    assert!(
        runtime
            .catalog()
            .get("get_order")
            .unwrap()
            .rate_limit()
            .is_unlimited()
    );
}
