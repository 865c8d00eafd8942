//! The execution pipeline, rule by rule, with hand-written tools (the macro is tested in the
//! facade crate).

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, BuildProblem, Carmy, Context, Effect, ErrorCategory, ExecutionStatus, Invocation,
    Limits, MemoryStore, MemoryStoreLimits, NoInput, Request, Requirements, Runtime, State, Tool,
    ToolSpec, testing::TestHost,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Counts runs, concurrent runs, the highest concurrency seen, and cancellations observed.
#[derive(Debug, Default)]
struct Probe {
    runs: AtomicUsize,
    running: AtomicUsize,
    max_running: AtomicUsize,
    dropped_midway: AtomicUsize,
}

impl Probe {
    fn enter(self: &Arc<Self>) -> RunGuard {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        RunGuard {
            probe: Arc::clone(self),
            finished: false,
        }
    }
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

struct RunGuard {
    probe: Arc<Probe>,
    finished: bool,
}

impl RunGuard {
    fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.probe.running.fetch_sub(1, Ordering::SeqCst);
        if !self.finished {
            self.probe.dropped_midway.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct WorkInput {
    /// How long the work takes.
    #[serde(default)]
    millis: u64,
    /// Optional tag, echoed back.
    tag: Option<String>,
    #[serde(default)]
    fail: bool,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
struct WorkOutput {
    run: usize,
    tag: Option<String>,
}

/// A tool whose effect and spec are chosen per test; it records what happens to it.
struct Work<const E: u8> {
    probe: Arc<Probe>,
}

const fn spec_for(effect: u8) -> ToolSpec {
    match effect {
        0 => ToolSpec::new("read", Effect::Read).idempotent(true),
        1 => ToolSpec::new("write", Effect::Write),
        2 => ToolSpec::new("purge", Effect::Destructive),
        3 => ToolSpec::new("idempotent_write", Effect::Write).idempotent(true),
        4 => ToolSpec::new("quick", Effect::Write).timeout(Duration::from_millis(50)),
        _ => ToolSpec::new("parallel_write", Effect::Write).parallel_safe(true),
    }
}

impl<const E: u8> Tool for Work<E> {
    type Input = WorkInput;
    type Output = WorkOutput;
    const SPEC: ToolSpec = spec_for(E);

    async fn run(&self, input: WorkInput, _: Invocation) -> Result<WorkOutput, AgentError> {
        let guard = self.probe.enter();
        tokio::time::sleep(Duration::from_millis(input.millis)).await;
        let run = self.probe.runs();
        guard.finish();
        if input.fail {
            return Err(AgentError::conflict("OUT_OF_STOCK", "nothing left")
                .with_details(json!({ "run": run })));
        }
        Ok(WorkOutput {
            run,
            tag: input.tag,
        })
    }
}

/// Gives up with its own error once it notices the cancellation.
struct Cooperative;
impl Tool for Cooperative {
    type Input = NoInput;
    type Output = ();
    const SPEC: ToolSpec = ToolSpec::new("cooperative", Effect::Read);
    async fn run(&self, _: NoInput, invocation: Invocation) -> Result<(), AgentError> {
        invocation.context().cancelled().await;
        Err(AgentError::internal("stopped early"))
    }
}

struct Panics;
impl Tool for Panics {
    type Input = NoInput;
    type Output = ();
    const SPEC: ToolSpec = ToolSpec::new("panics", Effect::None);
    async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
        panic!("boom")
    }
}

#[derive(Serialize, JsonSchema)]
struct Bounded {
    #[schemars(range(max = 10))]
    n: u32,
}

struct LiesAboutOutput;
impl Tool for LiesAboutOutput {
    type Input = NoInput;
    type Output = Bounded;
    const SPEC: ToolSpec = ToolSpec::new("lies", Effect::None);
    async fn run(&self, _: NoInput, _: Invocation) -> Result<Bounded, AgentError> {
        Ok(Bounded { n: 11 })
    }
}

#[derive(Debug)]
struct Inventory(u32);

struct UsesState;
impl Tool for UsesState {
    type Input = NoInput;
    type Output = u32;
    const SPEC: ToolSpec = ToolSpec::new("stock", Effect::Read);
    fn requirements(requirements: &mut Requirements) {
        requirements.state::<Inventory>();
    }
    async fn run(&self, _: NoInput, invocation: Invocation) -> Result<u32, AgentError> {
        let inventory: State<Inventory> = invocation.state();
        Ok(inventory.0)
    }
}

/// Reports what the context says, to prove it is the host's.
struct WhoAmI;
impl Tool for WhoAmI {
    type Input = serde_json::Map<String, Value>;
    type Output = Value;
    const SPEC: ToolSpec = ToolSpec::new("whoami", Effect::None);
    async fn run(
        &self,
        _: serde_json::Map<String, Value>,
        invocation: Invocation,
    ) -> Result<Value, AgentError> {
        let ctx = invocation.context();
        Ok(json!({
            "principal": ctx.principal(),
            "grants": ctx.grants().collect::<Vec<_>>(),
            "execution_id": ctx.execution_id().map(|id| id.to_string()),
        }))
    }
}

struct Fixture {
    runtime: Runtime,
    read: Arc<Probe>,
    write: Arc<Probe>,
    purge: Arc<Probe>,
    idempotent_write: Arc<Probe>,
    quick: Arc<Probe>,
    parallel_write: Arc<Probe>,
}

fn fixture_with(limits: Limits) -> Fixture {
    fixture_on(limits, None)
}

/// The fixture's tools, keeping request ids in `store` when one is given.
fn fixture_on(limits: Limits, store: Option<Arc<MemoryStore>>) -> Fixture {
    let probes: Vec<Arc<Probe>> = (0..6).map(|_| Arc::default()).collect();
    let mut carmy = Carmy::new()
        .tool(Work::<0> {
            probe: probes[0].clone(),
        })
        .tool(Work::<1> {
            probe: probes[1].clone(),
        })
        .tool(Work::<2> {
            probe: probes[2].clone(),
        })
        .tool(Work::<3> {
            probe: probes[3].clone(),
        })
        .tool(Work::<4> {
            probe: probes[4].clone(),
        })
        .tool(Work::<5> {
            probe: probes[5].clone(),
        })
        .tool(Panics)
        .tool(LiesAboutOutput)
        .tool(UsesState)
        .tool(WhoAmI)
        .tool(Cooperative)
        .state(Inventory(12))
        .limits(limits);
    if let Some(store) = store {
        carmy = carmy.idempotency_store(store);
    }
    let runtime = carmy.build().expect("valid catalog");
    Fixture {
        runtime,
        read: probes[0].clone(),
        write: probes[1].clone(),
        purge: probes[2].clone(),
        idempotent_write: probes[3].clone(),
        quick: probes[4].clone(),
        parallel_write: probes[5].clone(),
    }
}

fn fixture() -> Fixture {
    fixture_with(Limits::default())
}

#[tokio::test]
async fn unknown_tool_is_rejected_and_recorded() {
    let f = fixture();
    let outcome = f.runtime.call("reed", json!({})).await;
    assert_eq!(outcome.status, ExecutionStatus::Rejected);
    assert_eq!(outcome.unwrap_error_code(), "TOOL_NOT_FOUND");
    let record = f
        .runtime
        .execution(&outcome.execution_id)
        .expect("recorded");
    assert_eq!(record.target, "reed");
    assert_eq!(record.error_code.as_deref(), Some("TOOL_NOT_FOUND"));
    // Names are exact: no case folding.
    assert_eq!(
        f.runtime.call("READ", json!({})).await.unwrap_error_code(),
        "TOOL_NOT_FOUND"
    );
}

#[tokio::test]
async fn invalid_arguments_name_the_bad_field_and_never_run_the_tool() {
    let f = fixture();
    let outcome = f.runtime.call("read", json!({ "millis": "soon" })).await;
    assert_eq!(outcome.status, ExecutionStatus::Rejected);
    let error = outcome.error().expect("an error");
    assert_eq!(error.code(), "INVALID_ARGUMENTS");
    assert_eq!(error.details().unwrap()["errors"][0]["path"], "/millis");
    assert!(error.message().contains("/millis"), "{}", error.message());
    let outcome = f.runtime.call("read", json!([1, 2])).await;
    assert_eq!(outcome.unwrap_error_code(), "INVALID_ARGUMENTS");
    assert_eq!(f.read.runs(), 0);
}

#[tokio::test]
async fn optional_fields_may_be_null_or_absent() {
    let f = fixture();
    let outcome = f.runtime.call("read", json!({ "tag": null })).await;
    assert_eq!(outcome.unwrap_output::<WorkOutput>().tag, None);
    let outcome = f.runtime.call("read", Value::Null).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let outcome = f.runtime.call("read", json!({ "tag": "x" })).await;
    assert_eq!(
        outcome.unwrap_output::<WorkOutput>().tag.as_deref(),
        Some("x")
    );
}

#[tokio::test]
async fn deep_arguments_are_refused_before_validation() {
    let f = fixture_with(Limits::default().with_max_argument_depth(4));
    let outcome = f
        .runtime
        .call(
            "whoami",
            json!({ "a": { "b": { "c": { "d": { "e": 1 } } } } }),
        )
        .await;
    assert_eq!(outcome.unwrap_error_code(), "INVALID_ARGUMENTS");
    assert!(
        f.runtime
            .call("whoami", json!({ "a": { "b": 1 } }))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn confirmation_comes_only_from_the_host() {
    let f = fixture();
    let host = TestHost::new(f.runtime.clone());
    // Arguments cannot grant anything.
    let outcome = host
        .call("purge", json!({ "grant": "confirm:purge" }))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Rejected);
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), "CONFIRMATION_REQUIRED");
    assert_eq!(error.details().unwrap()["grant"], "confirm:purge");
    // Grants for other tools, or spelled differently, do not count.
    for grant in [
        "confirm:Purge",
        "confirm:purge ",
        "confirm:*",
        "purge",
        "confirm:read",
    ] {
        let outcome = host
            .clone()
            .with_grant(grant)
            .call("purge", json!({}))
            .await;
        assert_eq!(
            outcome.unwrap_error_code(),
            "CONFIRMATION_REQUIRED",
            "{grant}"
        );
    }
    assert_eq!(f.purge.runs(), 0);
    let outcome = host
        .with_grant("confirm:purge")
        .call("purge", json!({}))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    assert_eq!(f.purge.runs(), 1);
}

#[tokio::test]
async fn the_context_reaching_the_tool_is_the_hosts() {
    let f = fixture();
    let host = TestHost::new(f.runtime.clone())
        .with_principal("alice")
        .with_grant("confirm:purge");
    let outcome = host.call("whoami", json!({ "principal": "mallory" })).await;
    let seen = outcome.result.clone().unwrap();
    assert_eq!(seen["principal"], "alice");
    assert_eq!(seen["grants"], json!(["confirm:purge"]));
    assert_eq!(seen["execution_id"], outcome.execution_id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_duplicates_run_once() {
    let f = fixture();
    let calls = (0..100).map(|_| {
        let runtime = f.runtime.clone();
        tokio::spawn(async move {
            runtime
                .execute(Request::new("write", json!({ "millis": 50 })).request_id("order-1"))
                .await
        })
    });
    let outcomes: Vec<_> = futures_join(calls).await;
    assert_eq!(f.write.runs(), 1);
    let first = &outcomes[0].execution_id;
    assert!(outcomes.iter().all(|o| &o.execution_id == first));
    assert!(outcomes.iter().all(|o| o.result == outcomes[0].result));
    let succeeded = outcomes
        .iter()
        .filter(|o| o.status == ExecutionStatus::Succeeded)
        .count();
    let replayed = outcomes
        .iter()
        .filter(|o| o.status == ExecutionStatus::Replayed)
        .count();
    assert_eq!((succeeded, replayed), (1, 99));
}

async fn futures_join<T: Send + 'static>(
    handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<T> {
    let mut out = Vec::new();
    for handle in handles.collect::<Vec<_>>() {
        out.push(handle.await.expect("no panic"));
    }
    out
}

#[tokio::test]
async fn replays_keep_errors_and_execution_ids() {
    let f = fixture();
    let request = || Request::new("write", json!({ "fail": true })).request_id("r-err");
    let first = f.runtime.execute(request()).await;
    assert_eq!(first.status, ExecutionStatus::Failed);
    assert_eq!(first.unwrap_error_code(), "OUT_OF_STOCK");
    let again = f.runtime.execute(request()).await;
    assert_eq!(again.status, ExecutionStatus::Replayed);
    assert_eq!(again.execution_id, first.execution_id);
    assert_eq!(again.result, first.result);
    assert_eq!(f.write.runs(), 1);
}

#[tokio::test]
async fn same_request_id_with_other_arguments_conflicts() {
    let f = fixture();
    let first = f
        .runtime
        .execute(Request::new("write", json!({ "tag": "a" })).request_id("r1"))
        .await;
    assert!(first.is_ok());
    // Key order and formatting do not matter...
    let same: Value = serde_json::from_str(r#"{ "tag" : "a" }"#).unwrap();
    let replay = f
        .runtime
        .execute(Request::new("write", same).request_id("r1"))
        .await;
    assert_eq!(replay.status, ExecutionStatus::Replayed);
    // ...but the arguments and the tool do.
    let other = f
        .runtime
        .execute(Request::new("write", json!({ "tag": "b" })).request_id("r1"))
        .await;
    assert_eq!(other.unwrap_error_code(), "IDEMPOTENCY_CONFLICT");
    let other_tool = f
        .runtime
        .execute(Request::new("parallel_write", json!({ "tag": "a" })).request_id("r1"))
        .await;
    assert_eq!(other_tool.unwrap_error_code(), "IDEMPOTENCY_CONFLICT");
    assert_eq!(f.write.runs(), 1);
}

#[tokio::test]
async fn request_ids_are_scoped_by_principal() {
    let f = fixture();
    let as_ = |who: &str| {
        Request::new("write", json!({}))
            .request_id("shared-id")
            .context(Context::new().with_principal(who))
    };
    let alice = f.runtime.execute(as_("alice")).await;
    let bob = f.runtime.execute(as_("bob")).await;
    assert_eq!(bob.status, ExecutionStatus::Succeeded);
    assert_ne!(alice.execution_id, bob.execution_id);
    assert_eq!(f.write.runs(), 2);
}

#[tokio::test]
async fn retry_after_an_interrupted_write_is_uncertain() {
    let f = fixture();
    let token = CancellationToken::new();
    let request = |token: CancellationToken| {
        Request::new("write", json!({ "millis": 10_000 }))
            .request_id("r-cancel")
            .cancellation(token)
    };
    let running = tokio::spawn({
        let runtime = f.runtime.clone();
        let token = token.clone();
        async move { runtime.execute(request(token)).await }
    });
    wait_until(|| f.write.running.load(Ordering::SeqCst) == 1).await;
    token.cancel();
    let cancelled = running.await.unwrap();
    assert_eq!(cancelled.status, ExecutionStatus::Cancelled);
    assert_eq!(cancelled.unwrap_error_code(), "CANCELLED");
    assert_eq!(
        f.write.dropped_midway.load(Ordering::SeqCst),
        1,
        "the tool saw the cancellation"
    );
    assert_eq!(
        f.runtime.execution(&cancelled.execution_id).unwrap().status,
        ExecutionStatus::Cancelled
    );
    let retry = f.runtime.execute(request(CancellationToken::new())).await;
    assert_eq!(retry.unwrap_error_code(), "EXECUTION_UNCERTAIN");
    assert_eq!(f.write.runs(), 1);
}

#[tokio::test]
async fn a_tool_that_gives_up_on_cancellation_is_recorded_as_cancelled() {
    let f = fixture();
    let token = CancellationToken::new();
    let call = tokio::spawn({
        let runtime = f.runtime.clone();
        let token = token.clone();
        async move {
            runtime
                .execute(Request::new("cooperative", json!({})).cancellation(token))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    token.cancel();
    let outcome = call.await.unwrap();
    assert_eq!(outcome.status, ExecutionStatus::Cancelled);
    assert_eq!(outcome.unwrap_error_code(), "CANCELLED");
}

#[tokio::test]
async fn retry_after_an_interrupted_idempotent_write_runs_again() {
    let f = fixture();
    let token = CancellationToken::new();
    let running = tokio::spawn({
        let runtime = f.runtime.clone();
        let token = token.clone();
        async move {
            runtime
                .execute(
                    Request::new("idempotent_write", json!({ "millis": 300 }))
                        .request_id("r")
                        .cancellation(token),
                )
                .await
        }
    });
    wait_until(|| f.idempotent_write.running.load(Ordering::SeqCst) == 1).await;
    token.cancel();
    assert_eq!(running.await.unwrap().status, ExecutionStatus::Cancelled);
    let retry = f
        .runtime
        .execute(Request::new("idempotent_write", json!({ "millis": 300 })).request_id("r"))
        .await;
    // Nothing could have committed twice: the retry is a fresh run.
    assert_eq!(retry.status, ExecutionStatus::Succeeded);
    assert_eq!(f.idempotent_write.runs(), 2);
}

/// A store holding two request ids per principal: the bound a write meets.
fn store_of_two() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new(
        MemoryStoreLimits::default().with_request_ids(|ids| ids.with_max_per_principal(2)),
    ))
}

#[tokio::test]
async fn reads_and_idempotent_tools_take_no_claim_so_no_bound_refuses_them() {
    let store = store_of_two();
    let f = fixture_on(Limits::default(), Some(Arc::clone(&store)));
    // `read` is read-only and idempotent, `stock` read-only, `whoami` pure, `idempotent_write`
    // a write declared idempotent: each with a fresh request id per call, past the bound.
    for n in 0..10 {
        for tool in ["read", "stock", "whoami", "idempotent_write"] {
            let outcome = f
                .runtime
                .execute(Request::new(tool, json!({})).request_id(format!("{tool}-{n}")))
                .await;
            assert_eq!(
                outcome.status,
                ExecutionStatus::Succeeded,
                "{tool} #{n}: {outcome:?}"
            );
        }
    }
    assert!(store.is_empty(), "{} request ids kept", store.len());
}

#[tokio::test]
async fn a_read_retried_under_its_request_id_runs_again_and_never_conflicts() {
    let f = fixture();
    let read = |tag: &str| Request::new("read", json!({ "tag": tag })).request_id("r-1");
    let first = f.runtime.execute(read("a")).await;
    let retry = f.runtime.execute(read("a")).await;
    assert_eq!(retry.status, ExecutionStatus::Succeeded);
    assert_ne!(retry.execution_id, first.execution_id);
    // The id means nothing to a read: other arguments under it are another read.
    let other = f.runtime.execute(read("b")).await;
    assert_eq!(other.status, ExecutionStatus::Succeeded);
    assert_eq!(f.read.runs(), 3);
    // Nor did the reads take it: a write claims it, and its retry is replayed.
    let write = || Request::new("write", json!({ "tag": "a" })).request_id("r-1");
    assert_eq!(
        f.runtime.execute(write()).await.status,
        ExecutionStatus::Succeeded
    );
    assert_eq!(
        f.runtime.execute(write()).await.status,
        ExecutionStatus::Replayed
    );
    assert_eq!(f.write.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_duplicates_of_a_read_each_run() {
    let f = fixture();
    let calls = (0..8).map(|_| {
        let runtime = f.runtime.clone();
        tokio::spawn(async move {
            runtime
                .execute(Request::new("read", json!({ "millis": 50 })).request_id("same"))
                .await
        })
    });
    let outcomes = futures_join(calls).await;
    assert!(
        outcomes
            .iter()
            .all(|o| o.status == ExecutionStatus::Succeeded),
        "{outcomes:?}"
    );
    let ids: std::collections::HashSet<_> =
        outcomes.iter().map(|o| o.execution_id.clone()).collect();
    assert_eq!(ids.len(), 8, "each duplicate is an execution of its own");
    assert_eq!(f.read.runs(), 8);
}

#[tokio::test]
async fn past_its_share_a_principal_gets_capacity_for_new_write_ids_only() {
    let f = fixture_on(Limits::default(), Some(store_of_two()));
    let write = |id: &str| Request::new("write", json!({ "tag": id })).request_id(id);
    for id in ["w-1", "w-2"] {
        assert_eq!(
            f.runtime.execute(write(id)).await.status,
            ExecutionStatus::Succeeded
        );
    }
    let refused = f.runtime.execute(write("w-3")).await;
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    let error = refused.error().unwrap();
    assert_eq!(error.code(), "CAPACITY");
    assert_eq!(error.category(), ErrorCategory::Capacity);
    assert!(error.retryable());
    assert!(
        error.message().contains("holds 2 request ids of writes"),
        "{}",
        error.message()
    );
    assert_eq!(f.write.runs(), 2);
    // Nothing it holds was forgotten to make room: its retries replay.
    assert_eq!(
        f.runtime.execute(write("w-1")).await.status,
        ExecutionStatus::Replayed
    );
    // Reads under new ids and writes without one still run; another principal has its own share.
    let read = f
        .runtime
        .execute(Request::new("read", json!({})).request_id("r-9"))
        .await;
    assert_eq!(read.status, ExecutionStatus::Succeeded, "{read:?}");
    assert!(f.runtime.call("write", json!({})).await.is_ok());
    let bob = f
        .runtime
        .execute(write("w-3").context(Context::new().with_principal("bob")))
        .await;
    assert_eq!(bob.status, ExecutionStatus::Succeeded);
}

#[tokio::test]
async fn dropping_the_call_releases_or_poisons_the_request_id() {
    let f = fixture();
    let call = f
        .runtime
        .execute(Request::new("write", json!({ "millis": 10_000 })).request_id("gone"));
    // Poll the call until the tool runs, then drop it: the caller went away.
    tokio::select! {
        _ = call => unreachable!("the tool takes 10 s"),
        () = wait_until(|| f.write.running.load(Ordering::SeqCst) == 1) => {}
    }
    assert_eq!(f.write.dropped_midway.load(Ordering::SeqCst), 1);
    // The execution is recorded as cancelled, not left running.
    assert_eq!(f.runtime.running_executions(), 0);
    let retry = f
        .runtime
        .execute(Request::new("write", json!({ "millis": 10_000 })).request_id("gone"))
        .await;
    assert_eq!(retry.unwrap_error_code(), "EXECUTION_UNCERTAIN");
}

#[tokio::test]
async fn deadlines_stop_the_tool() {
    let f = fixture();
    let outcome = f
        .runtime
        .execute(Request::new("quick", json!({ "millis": 5_000 })).request_id("slow"))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::TimedOut);
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), "TIMEOUT");
    assert!(error.retryable());
    assert_eq!(f.quick.dropped_midway.load(Ordering::SeqCst), 1);
    // A write interrupted by its deadline may have committed: the retry is uncertain.
    let retry = f
        .runtime
        .execute(Request::new("quick", json!({ "millis": 5_000 })).request_id("slow"))
        .await;
    assert_eq!(retry.unwrap_error_code(), "EXECUTION_UNCERTAIN");
}

#[tokio::test]
async fn the_default_deadline_applies_to_tools_without_their_own() {
    let f = fixture_with(Limits::default().with_default_timeout(Duration::from_millis(30)));
    let outcome = f.runtime.call("read", json!({ "millis": 5_000 })).await;
    assert_eq!(outcome.status, ExecutionStatus::TimedOut);
    assert_eq!(
        f.runtime.catalog().get("quick").unwrap().timeout(),
        Duration::from_millis(50)
    );
}

#[tokio::test]
async fn panics_are_contained_and_recorded() {
    let f = fixture();
    let outcome = f.runtime.call("panics", json!({})).await;
    assert_eq!(outcome.status, ExecutionStatus::Panicked);
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), "TOOL_PANIC");
    assert!(
        !error.message().contains("boom"),
        "panic payloads stay server-side"
    );
    assert_eq!(
        f.runtime.execution(&outcome.execution_id).unwrap().status,
        ExecutionStatus::Panicked
    );
    // The runtime still serves.
    assert!(f.runtime.call("read", json!({})).await.is_ok());
}

#[tokio::test]
async fn output_that_breaks_its_schema_is_refused() {
    let f = fixture();
    let outcome = f.runtime.call("lies", json!({})).await;
    assert_eq!(outcome.status, ExecutionStatus::Failed);
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), "INVALID_OUTPUT");
    assert!(error.message().contains("/n"), "{}", error.message());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_never_overlap_unless_declared_parallel_safe() {
    let f = fixture();
    let mut handles = Vec::new();
    for i in 0..8 {
        for tool in ["write", "read", "parallel_write"] {
            let runtime = f.runtime.clone();
            handles.push(tokio::spawn(async move {
                runtime
                    .call(tool, json!({ "millis": 20, "tag": i.to_string() }))
                    .await
            }));
        }
    }
    for outcome in futures_join(handles.into_iter()).await {
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    assert_eq!(f.write.max_running.load(Ordering::SeqCst), 1);
    assert!(f.read.max_running.load(Ordering::SeqCst) > 1);
    assert!(f.parallel_write.max_running.load(Ordering::SeqCst) > 1);
}

#[tokio::test]
async fn beyond_the_concurrency_bound_calls_are_refused_not_queued() {
    let f = fixture_with(Limits::default().with_max_concurrent_executions(1));
    let busy = tokio::spawn({
        let runtime = f.runtime.clone();
        async move { runtime.call("read", json!({ "millis": 300 })).await }
    });
    wait_until(|| f.read.running.load(Ordering::SeqCst) == 1).await;
    let refused = f.runtime.call("read", json!({})).await;
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    let error = refused.error().unwrap();
    assert_eq!(error.code(), "CAPACITY");
    assert!(error.retryable());
    assert!(busy.await.unwrap().is_ok());
    assert!(f.runtime.call("read", json!({})).await.is_ok());
}

#[tokio::test]
async fn state_reaches_the_tool() {
    let f = fixture();
    assert_eq!(
        f.runtime
            .call("stock", json!({}))
            .await
            .unwrap_output::<u32>(),
        12
    );
}

#[test]
fn build_reports_every_problem_at_once() {
    struct BadName;
    impl Tool for BadName {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("bad name", Effect::None);
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }
    struct Shouty;
    impl Tool for Shouty {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("STOCK", Effect::None);
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }
    let error = Carmy::new()
        .tool(UsesState)
        .tool(Panics)
        .tool(Panics)
        .tool(BadName)
        .tool(Shouty)
        .build()
        .unwrap_err();
    let problems = error.problems();
    assert!(problems.contains(&BuildProblem::MissingState {
        type_name: std::any::type_name::<Inventory>().into(),
        tools: vec!["stock".into()],
        resources: vec![],
        prompts: vec![],
    }));
    assert!(problems.contains(&BuildProblem::DuplicateName {
        name: "panics".into()
    }));
    assert!(problems.contains(&BuildProblem::InvalidName {
        name: "bad name".into()
    }));
    assert!(problems.contains(&BuildProblem::NamesDifferOnlyByCase {
        first: "stock".into(),
        second: "STOCK".into()
    }));
    let message = error.to_string();
    let state = format!(
        "tool `stock` takes `State<{}>`",
        std::any::type_name::<Inventory>()
    );
    assert!(message.contains(&state), "{message}");
}

#[test]
fn the_catalog_keeps_registration_order_and_resolved_policy() {
    let f = fixture();
    let names: Vec<_> = f
        .runtime
        .catalog()
        .iter()
        .map(|entry| entry.name())
        .collect();
    assert_eq!(&names[..4], ["read", "write", "purge", "idempotent_write"]);
    let purge = f.runtime.catalog().get("purge").unwrap();
    assert_eq!(purge.confirmation(), carmy_core::Confirmation::Required);
    assert!(!purge.parallel_safe());
    let read = f.runtime.catalog().get("read").unwrap();
    assert!(read.parallel_safe() && read.idempotent());
    assert_eq!(read.input_schema()["properties"]["tag"]["type"], "string");
}

async fn wait_until(condition: impl Fn() -> bool) {
    for _ in 0..2_000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("condition not reached within 2 s");
}
