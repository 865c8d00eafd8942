//! Approval, the pipeline's third step: who may let a call that needs confirmation run. The
//! host's grants first; then the call's own approver, which may grant, decline or ask.

use crate::common;

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, Approval, ApprovalRequest, Approver, Ask, Asks, Context, ExecutionStatus,
    OutcomeKind, Pending, Request, Runtime,
};
use common::Shop;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Answers every call the same way, and remembers what it was asked.
#[derive(Clone)]
struct Scripted {
    answer: Approval,
    asked: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Scripted {
    fn new(answer: Approval) -> Self {
        Self {
            answer,
            asked: Arc::default(),
            seen: Arc::default(),
        }
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl Approver for Scripted {
    async fn approve(&self, request: ApprovalRequest<'_>) -> Approval {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(request.arguments().clone());
        self.answer.clone()
    }
}

/// Never answers: a human who walked away.
struct Silent;

impl Approver for Silent {
    async fn approve(&self, _: ApprovalRequest<'_>) -> Approval {
        std::future::pending().await
    }
}

fn runtime(shop: &Shop) -> Runtime {
    shop.carmy().build().expect("valid catalog")
}

fn cancel(order: &str) -> Request {
    Request::new("cancel_order", json!({ "order_id": order, "reason": null }))
}

#[tokio::test]
async fn the_hosts_grant_is_enough_and_nobody_is_asked() {
    let shop = Shop::new();
    let runtime = runtime(&shop);
    let approver = Scripted::new(Approval::Declined(AgentError::confirmation_declined(
        "cancel_order",
    )));
    let outcome = runtime
        .execute(
            cancel("ord-1")
                .context(Context::new().with_grant("confirm:cancel_order"))
                .approver(approver.clone()),
        )
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    assert_eq!(approver.asked(), 0);
    assert_eq!(shop.cancels.started(), 1);
}

#[tokio::test]
async fn tools_that_need_no_confirmation_never_ask() {
    let shop = Shop::new();
    let runtime = runtime(&shop);
    let approver = Scripted::new(Approval::Ask(Pending::new(
        Asks::new(),
        Some("state".into()),
    )));
    let outcome = runtime
        .execute(
            Request::new("place_order", json!({ "order_id": "ord-1" })).approver(approver.clone()),
        )
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    assert_eq!(approver.asked(), 0);
}

#[tokio::test]
async fn without_an_approver_the_call_needs_the_hosts_grant() {
    let shop = Shop::new();
    let outcome = runtime(&shop).execute(cancel("ord-1")).await;
    assert_eq!(outcome.status, ExecutionStatus::Rejected);
    assert_eq!(outcome.unwrap_error_code(), "CONFIRMATION_REQUIRED");
    assert_eq!(shop.cancels.started(), 0);
}

#[tokio::test]
async fn an_approval_sees_the_validated_arguments_and_the_call_runs_once() {
    let shop = Shop::new();
    let runtime = runtime(&shop);
    let approver = Scripted::new(Approval::Granted);
    let outcome = runtime
        .execute(cancel("ord-1").approver(approver.clone()))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    assert_eq!(shop.cancels.started(), 1);
    // The optional `null` was dropped by validation before anyone saw the arguments.
    assert_eq!(
        *approver.seen.lock().unwrap(),
        [json!({ "order_id": "ord-1" })]
    );
}

#[tokio::test]
async fn nobody_is_asked_about_a_call_that_could_not_run() {
    let shop = Shop::new();
    let runtime = runtime(&shop);
    let approver = Scripted::new(Approval::Granted);
    let outcome = runtime
        .execute(
            Request::new("cancel_order", json!({ "order": "ord-1" })).approver(approver.clone()),
        )
        .await;
    assert_eq!(outcome.unwrap_error_code(), "INVALID_ARGUMENTS");
    assert_eq!(approver.asked(), 0);
}

#[tokio::test]
async fn a_declined_call_never_runs_and_is_recorded() {
    let shop = Shop::new();
    let runtime = runtime(&shop);
    let approver = Scripted::new(Approval::Declined(AgentError::confirmation_declined(
        "cancel_order",
    )));
    let outcome = runtime.execute(cancel("ord-1").approver(approver)).await;
    assert_eq!(outcome.status, ExecutionStatus::Rejected);
    assert_eq!(outcome.unwrap_error_code(), "CONFIRMATION_DECLINED");
    assert_eq!(shop.cancels.started(), 0);
    let record = runtime.execution(&outcome.execution_id).expect("recorded");
    assert_eq!(record.status, ExecutionStatus::Rejected);
    assert_eq!(record.error_code.as_deref(), Some("CONFIRMATION_DECLINED"));
}

#[tokio::test]
async fn a_question_ends_the_call_without_running_it() {
    let shop = Shop::new();
    let runtime = runtime(&shop);
    let form = Ask::input("Cancel ord-1?", json!({ "type": "object" }));
    let question = Pending::new(
        Asks::new().with("confirm", form),
        Some("sealed-state".into()),
    );
    let approver = Scripted::new(Approval::Ask(question.clone()));
    let outcome = runtime.execute(cancel("ord-1").approver(approver)).await;
    assert_eq!(outcome.status, ExecutionStatus::InputRequired);
    assert_eq!(outcome.kind, OutcomeKind::InputRequired(question.clone()));
    assert_eq!(outcome.pending(), Some(&question));
    // A caller that cannot ask still reads a sensible error.
    assert_eq!(outcome.unwrap_error_code(), "CONFIRMATION_REQUIRED");
    assert_eq!(shop.cancels.started(), 0);
    let record = runtime.execution(&outcome.execution_id).expect("recorded");
    assert_eq!(record.status, ExecutionStatus::InputRequired);
}

#[tokio::test]
async fn cancelling_while_the_human_thinks_cancels_the_call() {
    let shop = Shop::new();
    let runtime = runtime(&shop);
    let token = CancellationToken::new();
    let call = runtime.execute(cancel("ord-1").approver(Silent).cancellation(token.clone()));
    let (outcome, ()) = tokio::join!(call, async { token.cancel() });
    assert_eq!(outcome.status, ExecutionStatus::Cancelled);
    assert_eq!(outcome.unwrap_error_code(), "CANCELLED");
    assert_eq!(shop.cancels.started(), 0);
    assert_eq!(
        runtime.execution(&outcome.execution_id).map(|r| r.status),
        Some(ExecutionStatus::Cancelled)
    );
}

#[tokio::test]
async fn approval_comes_before_the_request_id_is_claimed() {
    let shop = Shop::new();
    let runtime = runtime(&shop);
    // Declined: the request id stays free, so the approved retry runs.
    let declined = Scripted::new(Approval::Declined(AgentError::confirmation_declined(
        "cancel_order",
    )));
    let outcome = runtime
        .execute(cancel("ord-1").request_id("r-1").approver(declined))
        .await;
    assert_eq!(outcome.unwrap_error_code(), "CONFIRMATION_DECLINED");
    let approved = Scripted::new(Approval::Granted);
    let outcome = runtime
        .execute(cancel("ord-1").request_id("r-1").approver(approved.clone()))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    // The retry of the finished call is a replay; confirmation is still checked first.
    let replay = runtime
        .execute(cancel("ord-1").request_id("r-1").approver(approved.clone()))
        .await;
    assert_eq!(replay.status, ExecutionStatus::Replayed);
    assert_eq!(replay.execution_id, outcome.execution_id);
    assert_eq!(approved.asked(), 2);
    assert_eq!(shop.cancels.started(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_question_times_out_and_the_call_does_not_run() {
    let shop = Shop::new();
    let runtime = shop
        .carmy()
        .limits(carmy_core::Limits::default().with_approval_timeout(Duration::from_secs(30)))
        .build()
        .unwrap();
    let outcome = runtime.execute(cancel("ord-1").approver(Silent)).await;
    assert_eq!(outcome.status, ExecutionStatus::Rejected);
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), "CONFIRMATION_TIMEOUT");
    assert!(error.retryable());
    assert!(error.message().contains("30 s"), "{}", error.message());
    assert_eq!(shop.cancels.started(), 0);
}
