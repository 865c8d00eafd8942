//! Transactional tools: their writes to `Records` commit with their outcome, once, or not at
//! all; a run whose reads went stale runs again; a retry after an interruption runs anew
//! instead of being uncertain.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy::{
    CancellationToken, Effect, NoInput, Runtime,
    catalog::{BuildProblem, Invocation, Tool, ToolSpec},
    execution::{ExecutionStatus, Request},
    prelude::*,
    records::{Changes, RecordKey, RecordStore},
    store::{IdempotencyStore, MemoryStore},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
struct Deposit {
    account: String,
    cents: i64,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
struct Balance {
    account: String,
    cents: i64,
}

/// How many times each tool body ran, for tests to count re-runs.
#[derive(Default)]
struct Runs(AtomicUsize);

/// Adds to an account's balance; refuses to go below zero.
#[tool(effect = "write", transactional)]
async fn deposit(input: Deposit, runs: State<Runs>, ctx: &Context) -> Result<Balance, AgentError> {
    runs.0.fetch_add(1, Ordering::SeqCst);
    let records = ctx.records();
    let cents = records
        .get::<i64>("balances", &input.account)
        .await?
        .unwrap_or(0)
        + input.cents;
    // Let other executions run between the read and the write, as a real store's round trip
    // would.
    tokio::task::yield_now().await;
    if cents < 0 {
        return Err(AgentError::conflict(
            "INSUFFICIENT_FUNDS",
            "not enough money",
        ));
    }
    records.put("balances", &input.account, &cents)?;
    records.put(
        "journal",
        &ctx.execution_id().unwrap().to_string(),
        &input.cents,
    )?;
    Ok(Balance {
        account: input.account,
        cents,
    })
}

/// Reads a balance (not transactional: its records are read-only).
#[tool(effect = "read", idempotent)]
async fn balance(input: Deposit, ctx: &Context) -> Result<Balance, AgentError> {
    let cents = ctx
        .records()
        .get("balances", &input.account)
        .await?
        .unwrap_or(0);
    Ok(Balance {
        account: input.account,
        cents,
    })
}

/// Tries to write without declaring it.
#[tool(effect = "write")]
async fn sneaky(ctx: &Context) -> Result<(), AgentError> {
    ctx.records().put("balances", "x", &1)
}

/// Writes, then takes its time (so a test can interrupt it).
#[tool(effect = "write", transactional, timeout = "200ms")]
async fn slow_write(ctx: &Context) -> Result<(), AgentError> {
    ctx.records().put("balances", "slow", &1)?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    Ok(())
}

/// The same, not transactional: an interrupted run may have had effects.
#[tool(effect = "write", timeout = "200ms")]
async fn slow_plain_write() -> Result<(), AgentError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    Ok(())
}

fn runtime(store: Arc<MemoryStore>) -> Runtime {
    Carmy::new()
        .tool(deposit)
        .tool(balance)
        .tool(sneaky)
        .tool(slow_write)
        .tool(slow_plain_write)
        .state(Runs::default())
        .store(store)
        .build()
        .unwrap()
}

fn with_id(tool: &str, arguments: serde_json::Value, id: &str) -> Request {
    Request::new(tool, arguments).request_id(id)
}

async fn balance_of(runtime: &Runtime, account: &str) -> i64 {
    runtime
        .call("balance", json!({ "account": account, "cents": 0 }))
        .await
        .unwrap_output::<Balance>()
        .cents
}

async fn journal_len(store: &MemoryStore) -> usize {
    store.list("journal").await.unwrap().records.len()
}

#[tokio::test]
async fn writes_commit_with_the_outcome_and_a_retry_replays_without_writing_again() {
    let store = Arc::new(MemoryStore::default());
    let runtime = runtime(Arc::clone(&store));
    let request = || with_id("deposit", json!({ "account": "a", "cents": 500 }), "dep-1");
    let first = runtime.execute(request()).await;
    assert_eq!(first.unwrap_output::<Balance>().cents, 500);
    let again = runtime.execute(request()).await;
    assert_eq!(again.status, ExecutionStatus::Replayed);
    assert_eq!(again.execution_id, first.execution_id);
    assert_eq!(balance_of(&runtime, "a").await, 500);
    assert_eq!(journal_len(&store).await, 1);
}

#[tokio::test]
async fn a_failed_run_writes_nothing_and_its_error_is_replayed() {
    let store = Arc::new(MemoryStore::default());
    let runtime = runtime(Arc::clone(&store));
    let request = || with_id("deposit", json!({ "account": "a", "cents": -1 }), "dep-2");
    assert_eq!(
        runtime.execute(request()).await.unwrap_error_code(),
        "INSUFFICIENT_FUNDS"
    );
    let again = runtime.execute(request()).await;
    assert_eq!(again.status, ExecutionStatus::Replayed);
    assert_eq!(again.unwrap_error_code(), "INSUFFICIENT_FUNDS");
    assert_eq!(journal_len(&store).await, 0);
}

#[tokio::test]
async fn without_a_request_id_the_writes_still_commit_all_or_nothing() {
    let store = Arc::new(MemoryStore::default());
    let runtime = runtime(Arc::clone(&store));
    runtime
        .call("deposit", json!({ "account": "b", "cents": 7 }))
        .await
        .unwrap_output::<Balance>();
    assert_eq!(balance_of(&runtime, "b").await, 7);
    assert_eq!(journal_len(&store).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_one_store_serialize_their_transactions_by_running_again() {
    const REPLICAS: usize = 3;
    const DEPOSITS: usize = 40;
    let store = Arc::new(MemoryStore::default());
    let replicas: Vec<Runtime> = (0..REPLICAS).map(|_| runtime(Arc::clone(&store))).collect();
    let calls: Vec<_> = (0..DEPOSITS)
        .map(|n| {
            let replica = replicas[n % REPLICAS].clone();
            tokio::spawn(async move {
                replica
                    .call("deposit", json!({ "account": "shared", "cents": 1 }))
                    .await
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap().unwrap_output::<Balance>();
    }
    // Every deposit counted once: no lost update, however the runs interleaved.
    assert_eq!(balance_of(&replicas[0], "shared").await, DEPOSITS as i64);
    assert_eq!(journal_len(&store).await, DEPOSITS);
}

#[tokio::test]
async fn a_run_whose_reads_changed_runs_again_before_anything_is_kept() {
    let store = Arc::new(MemoryStore::default());
    let runtime = runtime(Arc::clone(&store));
    // A tool that, the first time only, changes the balance it read behind its own back.
    struct Racy(Arc<MemoryStore>);
    impl Tool for Racy {
        type Input = NoInput;
        type Output = i64;
        const SPEC: ToolSpec = ToolSpec::new("racy", Effect::Write).transactional(true);
        async fn run(&self, _: NoInput, invocation: Invocation) -> Result<i64, AgentError> {
            let records = invocation.context().records();
            let seen: i64 = records.get("balances", "r").await?.unwrap_or(0);
            if seen == 0 {
                let other = Changes {
                    writes: vec![(RecordKey::new("balances", "r"), Some(json!(100)))],
                    ..Changes::default()
                };
                let _ = self.0.commit(&other, None).await.unwrap();
            }
            records.put("balances", "r", &(seen + 1))?;
            Ok(seen + 1)
        }
    }
    let racy = Carmy::new()
        .tool(Racy(Arc::clone(&store)))
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let outcome = racy.call("racy", json!({})).await;
    // The first run read 0 and lost; the second read the other commit's 100.
    assert_eq!(outcome.unwrap_output::<i64>(), 101);
    assert_eq!(balance_of(&runtime, "r").await, 101);
}

#[tokio::test]
async fn a_tool_that_always_conflicts_gives_up_retryably_and_commits_nothing() {
    let store = Arc::new(MemoryStore::default());
    struct Hopeless(Arc<MemoryStore>, Arc<AtomicUsize>);
    impl Tool for Hopeless {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("hopeless", Effect::Write).transactional(true);
        async fn run(&self, _: NoInput, invocation: Invocation) -> Result<(), AgentError> {
            let n = self.1.fetch_add(1, Ordering::SeqCst);
            let records = invocation.context().records();
            let _: Option<i64> = records.get("balances", "h").await?;
            let bump = Changes {
                writes: vec![(RecordKey::new("balances", "h"), Some(json!(n)))],
                ..Changes::default()
            };
            let _ = self.0.commit(&bump, None).await.unwrap();
            records.put("journal", "hopeless", &true)
        }
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = Carmy::new()
        .tool(Hopeless(Arc::clone(&store), Arc::clone(&runs)))
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let outcome = runtime.execute(with_id("hopeless", json!({}), "h-1")).await;
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), "TRANSACTION_CONFLICT");
    assert!(error.retryable());
    assert!(runs.load(Ordering::SeqCst) > 1);
    assert_eq!(journal_len(&store).await, 0);
    // Nothing was kept under the request id: the retry runs (and conflicts) again.
    let before = runs.load(Ordering::SeqCst);
    let retry = runtime.execute(with_id("hopeless", json!({}), "h-1")).await;
    assert_eq!(retry.unwrap_error_code(), "TRANSACTION_CONFLICT");
    assert!(runs.load(Ordering::SeqCst) > before);
}

#[tokio::test]
async fn an_interrupted_transactional_write_runs_again_where_a_plain_one_is_uncertain() {
    let store = Arc::new(MemoryStore::default());
    let runtime = runtime(Arc::clone(&store));
    let timed_out = runtime
        .execute(with_id("slow_write", json!({}), "s-1"))
        .await;
    assert_eq!(timed_out.status, ExecutionStatus::TimedOut);
    assert_eq!(
        store
            .read(&RecordKey::new("balances", "slow"))
            .await
            .unwrap()
            .value,
        None
    );
    let retry = runtime
        .execute(with_id("slow_write", json!({}), "s-1"))
        .await;
    assert_eq!(
        retry.status,
        ExecutionStatus::TimedOut,
        "it ran again: {retry:?}"
    );

    let cancellation = CancellationToken::new();
    let request = with_id("slow_plain_write", json!({}), "p-1").cancellation(cancellation.clone());
    let call = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.execute(request).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancellation.cancel();
    assert_eq!(call.await.unwrap().status, ExecutionStatus::Cancelled);
    let retry = runtime
        .execute(with_id("slow_plain_write", json!({}), "p-1"))
        .await;
    assert_eq!(retry.unwrap_error_code(), "EXECUTION_UNCERTAIN");
}

#[tokio::test]
async fn a_lost_lease_of_a_transactional_write_frees_the_key_for_a_clean_run() {
    // What a replica killed mid-call leaves behind: a claim with the terms the runtime gives a
    // transactional write, never settled.
    let store = Arc::new(MemoryStore::default());
    let runtime = runtime(Arc::clone(&store));
    let key = carmy::store::IdempotencyKey::new(None, "dead-1");
    let arguments = json!({ "account": "d", "cents": 5 });
    let terms = carmy::store::LeaseTerms {
        duration: Duration::from_millis(50),
        if_lost: carmy::store::Release::Retry,
    };
    let fingerprint = carmy::store::Fingerprint::of("deposit", &arguments);
    assert!(matches!(
        store.claim(&key, fingerprint, terms).await.unwrap(),
        carmy::store::Claim::Acquired(_)
    ));
    tokio::time::sleep(Duration::from_millis(80)).await;
    let outcome = runtime
        .execute(with_id("deposit", arguments, "dead-1"))
        .await;
    assert_eq!(outcome.unwrap_output::<Balance>().cents, 5);
}

#[tokio::test]
async fn reads_see_the_runs_own_writes_and_listings_merge_them() {
    struct Listing;
    impl Tool for Listing {
        type Input = NoInput;
        type Output = Vec<String>;
        const SPEC: ToolSpec = ToolSpec::new("listing", Effect::Write).transactional(true);
        async fn run(&self, _: NoInput, invocation: Invocation) -> Result<Vec<String>, AgentError> {
            let records = invocation.context().records();
            records.put("notes", "b", &"second")?;
            records.put("notes", "a", &"first")?;
            records.delete("notes", "old")?;
            assert_eq!(
                records.get::<String>("notes", "a").await?.as_deref(),
                Some("first")
            );
            assert_eq!(records.get::<String>("notes", "old").await?, None);
            let listed: Vec<(String, String)> = records.list("notes").await?;
            Ok(listed
                .into_iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect())
        }
    }
    let store = Arc::new(MemoryStore::default());
    let seed = Changes {
        writes: vec![
            (RecordKey::new("notes", "old"), Some(json!("gone"))),
            (RecordKey::new("notes", "c"), Some(json!("third"))),
        ],
        ..Changes::default()
    };
    let _ = store.commit(&seed, None).await.unwrap();
    let runtime = Carmy::new()
        .tool(Listing)
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let listed: Vec<String> = runtime.call("listing", json!({})).await.unwrap_output();
    assert_eq!(listed, ["a=first", "b=second", "c=third"]);
    let kept = store.list("notes").await.unwrap();
    let keys: Vec<&str> = kept.records.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(keys, ["a", "b", "c"]);
}

#[tokio::test]
async fn a_tool_that_is_not_transactional_cannot_write_records() {
    let runtime = runtime(Arc::new(MemoryStore::default()));
    let outcome = runtime.call("sneaky", json!({})).await;
    assert_eq!(outcome.unwrap_error_code(), "RECORDS_READ_ONLY");
    assert!(outcome.error().unwrap().message().contains("transactional"));
}

#[test]
fn build_refuses_transactional_tools_that_cannot_commit() {
    struct ReadOnly;
    impl Tool for ReadOnly {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec =
            ToolSpec::new("read_only", Effect::ExternalWrite).transactional(true);
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }
    let error = Carmy::new().tool(ReadOnly).build().unwrap_err();
    assert!(error.problems().iter().any(|problem| matches!(
        problem,
        BuildProblem::TransactionalEffect {
            effect: "external_write",
            ..
        }
    )));

    /// A store that keeps claims but no records.
    struct ClaimsOnly(MemoryStore);
    impl IdempotencyStore for ClaimsOnly {
        fn claim(
            &self,
            key: &carmy::store::IdempotencyKey,
            fingerprint: carmy::store::Fingerprint,
            terms: carmy::store::LeaseTerms,
        ) -> impl Future<Output = Result<carmy::store::Claim, carmy::store::StoreError>> + Send
        {
            self.0.claim(key, fingerprint, terms)
        }
        fn finish(
            &self,
            lease: &carmy::store::Lease,
            recorded: carmy::store::Recorded,
        ) -> impl Future<Output = Result<(), carmy::store::StoreError>> + Send {
            self.0.finish(lease, recorded)
        }
        fn release(
            &self,
            lease: &carmy::store::Lease,
            release: carmy::store::Release,
        ) -> impl Future<Output = Result<(), carmy::store::StoreError>> + Send {
            self.0.release(lease, release)
        }
    }
    let error = Carmy::new()
        .tool(deposit)
        .state(Runs::default())
        .idempotency_store(ClaimsOnly(MemoryStore::default()))
        .build()
        .unwrap_err();
    assert_eq!(
        error.problems(),
        [BuildProblem::TransactionalWithoutRecords {
            tool: "deposit".into()
        }]
    );
}
