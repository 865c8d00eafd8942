//! The runtime against a hostile or unlucky host: look-alike tool names, replays across
//! principals, retry storms mixing matching and conflicting arguments, retries piled on a write
//! that gets cancelled, and a flood of request ids against a bounded store. (Rule-by-rule
//! behaviour is in `pipeline.rs`; this file pushes the same rules harder.)

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, Carmy, Confirmation, Context, Effect, ExecutionStatus, Invocation, MemoryStore,
    MemoryStoreLimits, Request, Runtime, Tool, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Deserialize, JsonSchema)]
struct Input {
    #[serde(default)]
    n: u64,
    #[serde(default)]
    millis: u64,
}

/// Counts its runs; waits `millis` first.
struct Counted<const E: u8>(Arc<AtomicUsize>);

const fn spec(effect: u8) -> ToolSpec {
    match effect {
        0 => ToolSpec::new("delete_account", Effect::Destructive)
            .confirmation(Confirmation::Required),
        1 => ToolSpec::new("transfer", Effect::Write),
        _ => ToolSpec::new("lookup", Effect::Read).idempotent(true),
    }
}

impl<const E: u8> Tool for Counted<E> {
    type Input = Input;
    type Output = u64;
    const SPEC: ToolSpec = spec(E);
    async fn run(&self, input: Input, _: Invocation) -> Result<u64, AgentError> {
        let run = self.0.fetch_add(1, Ordering::SeqCst) as u64 + 1;
        tokio::time::sleep(Duration::from_millis(input.millis)).await;
        Ok(input.n * 1000 + run)
    }
}

struct Fixture {
    runtime: Runtime,
    deletes: Arc<AtomicUsize>,
    transfers: Arc<AtomicUsize>,
    lookups: Arc<AtomicUsize>,
    store: Arc<MemoryStore>,
}

fn fixture(store_limits: MemoryStoreLimits) -> Fixture {
    let (deletes, transfers, lookups) = (Arc::default(), Arc::default(), Arc::default());
    let store = Arc::new(MemoryStore::new(store_limits));
    let runtime = Carmy::new()
        .tool(Counted::<0>(Arc::clone(&deletes)))
        .tool(Counted::<1>(Arc::clone(&transfers)))
        .tool(Counted::<2>(Arc::clone(&lookups)))
        // An `Arc` of a store is a store: the test looks into it while the runtime uses it.
        .idempotency_store(Arc::clone(&store))
        .build()
        .expect("valid catalog");
    Fixture {
        runtime,
        deletes,
        transfers,
        lookups,
        store,
    }
}

fn code(outcome: &carmy_core::Outcome) -> &str {
    outcome.result.as_ref().err().map_or("", AgentError::code)
}

#[tokio::test]
async fn look_alike_tool_names_resolve_to_nothing() {
    let f = fixture(MemoryStoreLimits::default());
    let admin = Context::new()
        .with_principal("admin")
        .with_grants(["confirm:delete_account"]);
    for name in [
        "Delete_Account",
        "DELETE_ACCOUNT",
        "delete_acc\u{043e}unt",
        "d\u{0435}lete_account",
        "delete_account\u{200b}",
        "\u{200d}delete_account",
        "\u{feff}delete_account",
        "delete\u{2010}account",
        "delete\u{ff3f}account",
        "\u{ff44}elete_account",
        "delete_account ",
        "delete_account\n",
        "delete_account\0",
        "delete_accoun",
        "delete_accountt",
        "",
    ] {
        let outcome = f
            .runtime
            .execute(Request::new(name, json!({})).context(admin.clone()))
            .await;
        assert_eq!(outcome.status, ExecutionStatus::Rejected, "{name:?}");
        assert_eq!(code(&outcome), "TOOL_NOT_FOUND", "{name:?}");
    }
    assert_eq!(f.deletes.load(Ordering::SeqCst), 0);
    assert!(f.runtime.catalog().get("delete_account").is_some());
}

#[tokio::test]
async fn a_request_id_never_carries_a_confirmation_to_another_principal() {
    let f = fixture(MemoryStoreLimits::default());
    let call = |context: Context| {
        f.runtime.execute(
            Request::new("delete_account", json!({ "n": 1 }))
                .request_id("del-1")
                .context(context),
        )
    };
    let granted = |who: &str| {
        Context::new()
            .with_principal(who)
            .with_grants(["confirm:delete_account"])
    };
    let done = call(granted("admin")).await;
    assert_eq!(done.status, ExecutionStatus::Succeeded);

    // Same request id, same arguments, no grant: refused before the store is even asked, for
    // another principal, for no principal, and for the granted principal without its grant.
    for context in [
        Context::new().with_principal("mallory"),
        Context::new(),
        Context::new().with_principal("admin"),
        Context::new().with_principal("mallory").with_grants([
            "confirm:Delete_Account",
            "confirm:*",
            "delete_account",
        ]),
    ] {
        let outcome = call(context.clone()).await;
        assert_eq!(code(&outcome), "CONFIRMATION_REQUIRED", "{context:?}");
    }
    // Another principal with its own grant runs its own execution: keys are per principal, so
    // it never sees the admin's outcome.
    let other = call(granted("ops")).await;
    assert_eq!(other.status, ExecutionStatus::Succeeded);
    assert_ne!(other.execution_id, done.execution_id);
    // The admin's retry is a replay of its own.
    let again = call(granted("admin")).await;
    assert_eq!(again.status, ExecutionStatus::Replayed);
    assert_eq!(again.execution_id, done.execution_id);
    assert_eq!(f.deletes.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_storm_mixing_arguments_runs_one_execution() {
    let f = fixture(MemoryStoreLimits::default());
    let calls: Vec<_> = (0..1000)
        .map(|i| {
            let runtime = f.runtime.clone();
            // Every third call has other arguments under the same request id.
            let n = if i % 3 == 0 { 2 } else { 1 };
            tokio::spawn(async move {
                let outcome = runtime
                    .execute(
                        Request::new("transfer", json!({ "n": n, "millis": 20 }))
                            .request_id("storm")
                            .context(Context::new().with_principal("agent")),
                    )
                    .await;
                (n, outcome)
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for call in calls {
        outcomes.push(call.await.expect("join"));
    }
    assert_eq!(f.transfers.load(Ordering::SeqCst), 1);
    let executed: Vec<_> = outcomes
        .iter()
        .filter(|(_, outcome)| outcome.status == ExecutionStatus::Succeeded)
        .collect();
    assert_eq!(executed.len(), 1);
    let (winner_n, winner) = executed[0];
    for (n, outcome) in &outcomes {
        if n == winner_n {
            assert!(
                matches!(
                    outcome.status,
                    ExecutionStatus::Succeeded | ExecutionStatus::Replayed
                ),
                "{outcome:?}"
            );
            assert_eq!(outcome.execution_id, winner.execution_id);
            assert_eq!(outcome.result, winner.result);
        } else {
            assert_eq!(code(outcome), "IDEMPOTENCY_CONFLICT", "{outcome:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_waiting_on_a_write_that_gets_cancelled_are_all_uncertain() {
    let f = fixture(MemoryStoreLimits::default());
    let request = |token: &CancellationToken| {
        Request::new("transfer", json!({ "n": 7, "millis": 60_000 }))
            .request_id("t-1")
            .cancellation(token.clone())
    };
    let first_token = CancellationToken::new();
    let first = tokio::spawn({
        let runtime = f.runtime.clone();
        let request = request(&first_token);
        async move { runtime.execute(request).await }
    });
    while f.transfers.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // 200 retries pile up behind the running write.
    let retries: Vec<_> = (0..200)
        .map(|_| {
            let runtime = f.runtime.clone();
            let request = request(&CancellationToken::new());
            tokio::spawn(async move { runtime.execute(request).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    first_token.cancel();
    assert_eq!(
        first.await.expect("join").status,
        ExecutionStatus::Cancelled
    );
    for retry in retries {
        let outcome = retry.await.expect("join");
        assert_eq!(code(&outcome), "EXECUTION_UNCERTAIN", "{outcome:?}");
    }
    assert_eq!(f.transfers.load(Ordering::SeqCst), 1);
    assert_eq!(f.runtime.running_executions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_write_ids_is_refused_past_the_bound_and_forgets_nothing() {
    let f = fixture(
        MemoryStoreLimits::default()
            .with_request_ids(|ids| ids.with_max(500))
            .with_ttl(Duration::from_secs(3600)),
    );
    let mut refused = 0;
    for wave in 0..4 {
        let calls: Vec<_> = (0..250)
            .map(|i| {
                let runtime = f.runtime.clone();
                tokio::spawn(async move {
                    runtime
                        .execute(
                            Request::new("transfer", json!({ "n": i }))
                                .request_id(format!("flood-{wave}-{i}")),
                        )
                        .await
                })
            })
            .collect();
        for call in calls {
            let outcome = call.await.expect("join");
            // Succeeded, or refused with CAPACITY (retryable) once the bound is reached: never
            // a key forgotten early, never unbounded.
            if outcome.status == ExecutionStatus::Succeeded {
                continue;
            }
            let error = outcome.error().expect("refused");
            assert_eq!(error.code(), "CAPACITY", "{outcome:?}");
            assert!(error.retryable());
            refused += 1;
        }
        assert!(f.store.len() <= 500, "{} keys held", f.store.len());
    }
    assert_eq!(refused, 500);
    assert_eq!(f.transfers.load(Ordering::SeqCst), 500);
    // The first keys are still replayed: exactly-once is not an eviction policy.
    let outcome = f
        .runtime
        .execute(Request::new("transfer", json!({ "n": 0 })).request_id("flood-0-0"))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Replayed);
    let _: Value = outcome.result.expect("replayed output");
    // A full store refuses nothing that claims nothing: reads under fresh ids still run.
    let reads: Vec<_> = (0..250)
        .map(|i| {
            let runtime = f.runtime.clone();
            tokio::spawn(async move {
                runtime
                    .execute(
                        Request::new("lookup", json!({ "n": i })).request_id(format!("read-{i}")),
                    )
                    .await
            })
        })
        .collect();
    for read in reads {
        let outcome = read.await.expect("join");
        assert_eq!(outcome.status, ExecutionStatus::Succeeded, "{outcome:?}");
    }
    assert_eq!(f.lookups.load(Ordering::SeqCst), 250);
    assert_eq!(f.store.len(), 500);
}
