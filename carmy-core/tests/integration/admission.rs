//! Admission, the pipeline's fifth step: may the call start now? Capacity and the tool's turn
//! are built in; added admissions are asked after them, and every refusal is recorded.

use crate::common;

use std::{sync::Arc, time::Duration};

use carmy_core::{
    Admission, AdmissionRequest, AgentError, Context, ExecutionStatus, Permit, Request,
};
use common::{Shop, wait_until};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Refuses principals other than `alice`.
struct OnlyAlice;

impl Admission for OnlyAlice {
    async fn admit(&self, request: AdmissionRequest<'_>) -> Result<Permit, AgentError> {
        match request.caller().principal() {
            Some("alice") => Ok(Permit::none()),
            _ => Err(AgentError::permission("NOT_ALICE", "only alice may call")),
        }
    }
}

/// One call at a time, whatever the tool: the permit is the slot.
struct OneAtATime(Arc<Semaphore>);

impl Admission for OneAtATime {
    async fn admit(&self, _: AdmissionRequest<'_>) -> Result<Permit, AgentError> {
        let slot = Arc::clone(&self.0).acquire_owned().await;
        slot.map(Permit::from)
            .map_err(|_| AgentError::internal("closed"))
    }
}

/// Never decides.
struct Stuck;

impl Admission for Stuck {
    async fn admit(&self, _: AdmissionRequest<'_>) -> Result<Permit, AgentError> {
        std::future::pending().await
    }
}

fn get(order: &str) -> Request {
    Request::new("get_order", json!({ "order_id": order }))
}

#[tokio::test]
async fn an_added_admission_refuses_before_the_tool_runs_and_the_refusal_is_recorded() {
    let shop = Shop::new();
    let runtime = shop.carmy().admission(OnlyAlice).build().unwrap();
    let refused = runtime
        .execute(get("ord-1").context(Context::new().with_principal("mallory")))
        .await;
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    assert_eq!(refused.unwrap_error_code(), "NOT_ALICE");
    assert_eq!(shop.gets.started(), 0);
    let record = runtime.execution(&refused.execution_id).expect("recorded");
    assert_eq!(record.error_code.as_deref(), Some("NOT_ALICE"));
    let admitted = runtime
        .execute(get("ord-1").context(Context::new().with_principal("alice")))
        .await;
    assert_eq!(admitted.status, ExecutionStatus::Succeeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_is_held_until_the_run_ends() {
    let shop = Shop::new();
    let runtime = shop
        .carmy()
        .admission(OneAtATime(Arc::new(Semaphore::new(1))))
        .build()
        .unwrap();
    let calls: Vec<_> = (0..4)
        .map(|i| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                let order = format!("ord-{i}");
                runtime
                    .execute(Request::new(
                        "get_order",
                        json!({ "order_id": order, "millis": 20 }),
                    ))
                    .await
            })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().status, ExecutionStatus::Succeeded);
    }
    // `get_order` is a read, parallel-safe: only the added admission kept them apart.
    assert_eq!(shop.gets.max_running(), 1);
    assert_eq!(shop.gets.started(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_call_waits_for_admission_at_most_its_timeout() {
    let shop = Shop::new();
    let runtime = shop.carmy().admission(Stuck).build().unwrap();
    let refused = runtime.execute(get("ord-1")).await;
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    let error = refused.error().unwrap();
    assert_eq!(error.code(), "CAPACITY");
    assert!(error.retryable());
    assert!(error.message().contains("500 ms"), "{}", error.message());
    assert_eq!(shop.gets.started(), 0);
}

#[tokio::test]
async fn a_write_waits_for_its_turn_and_can_be_cancelled_while_it_waits() {
    let shop = Shop::new();
    let runtime = shop.carmy().build().unwrap();
    let busy = tokio::spawn({
        let runtime = runtime.clone();
        async move {
            runtime
                .execute(Request::new(
                    "place_order",
                    json!({ "order_id": "ord-1", "millis": 300 }),
                ))
                .await
        }
    });
    wait_until(|| shop.places.running() == 1).await;
    let token = CancellationToken::new();
    let waiting = runtime.execute(
        Request::new("place_order", json!({ "order_id": "ord-2" })).cancellation(token.clone()),
    );
    let (outcome, ()) = tokio::join!(waiting, async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    });
    assert_eq!(outcome.status, ExecutionStatus::Cancelled);
    assert_eq!(shop.places.started(), 1, "the second write never started");
    assert_eq!(busy.await.unwrap().status, ExecutionStatus::Succeeded);
}

#[tokio::test]
async fn a_refused_call_leaves_its_request_id_free() {
    let shop = Shop::new();
    let runtime = shop.carmy().admission(OnlyAlice).build().unwrap();
    let as_ = |principal: &str| Context::new().with_principal(principal);
    // A write: the call that claims its request id.
    let place = || Request::new("place_order", json!({ "order_id": "ord-1" })).request_id("r-1");
    let refused = runtime.execute(place().context(as_("mallory"))).await;
    assert_eq!(refused.unwrap_error_code(), "NOT_ALICE");
    // Mallory's key is hers; what matters is that her refused claim was released, not kept.
    let again = runtime.execute(place().context(as_("mallory"))).await;
    assert_eq!(again.unwrap_error_code(), "NOT_ALICE");
    assert_ne!(again.execution_id, refused.execution_id, "not a replay");
}
