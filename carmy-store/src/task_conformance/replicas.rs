//! Replicas: runtimes sharing one store, as processes share a database. What one writes (a
//! cancel request, answers) reaches the task another runs, and a replica that dies leaves its task
//! `failed`.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, AskKind, Asked, Asker, Asks, Carmy, Context, Effect, ExecutionStatus, Invocation,
    Limits, NoInput, OutcomeKind, Request, Runtime, TaskKey, TaskRecord, TaskStatus, TaskStore,
    TaskSupport, Tool, ToolSpec, codes,
};
use serde_json::{Value, json};
use tokio::time::{Instant, sleep, timeout};

use super::{
    opener::TaskOpener,
    support::{LONG, NOTICE, SHORT, accept, form},
};

/// Works until cancelled (or a minute); counts its starts and the stops it saw.
struct Work {
    started: Arc<AtomicUsize>,
}

impl Tool for Work {
    type Input = NoInput;
    type Output = Value;
    const SPEC: ToolSpec = ToolSpec::new("work", Effect::Write)
        .task(TaskSupport::Required)
        .timeout(Duration::from_secs(60));

    async fn run(&self, _: NoInput, invocation: Invocation) -> Result<Value, AgentError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        invocation
            .context()
            .progress(1.0, Some(2.0), Some("working"));
        sleep(Duration::from_secs(60)).await;
        Ok(json!("worked a minute"))
    }
}

/// Asks two questions at once, then says what it was told.
struct Confirm;

impl Tool for Confirm {
    type Input = NoInput;
    type Output = Value;
    const SPEC: ToolSpec = ToolSpec::new("confirm", Effect::Write).task(TaskSupport::Optional);

    async fn run(&self, _: NoInput, invocation: Invocation) -> Result<Value, AgentError> {
        let answers = invocation
            .context()
            .ask(
                Asks::new()
                    .with("first", form("First?"))
                    .with("second", form("Second?")),
            )
            .await?;
        Ok(json!({
            "first": answers.input("first")?.action.as_str(),
            "second": answers.input("second")?.action.as_str(),
        }))
    }
}

/// A client that can answer any question (in a task, the answers come through the store).
struct AnyClient;

impl Asker for AnyClient {
    fn can_ask(&self, _: AskKind) -> bool {
        true
    }

    async fn ask(&self, _: &Asks) -> Asked {
        Asked::Refused(AgentError::internal("a task's questions go to its store"))
    }
}

/// One replica: a runtime over the shared `store`, with `lease` on the tasks it runs.
fn replica<S: TaskStore>(store: Arc<S>, lease: Duration) -> (Runtime, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    let runtime = Carmy::new()
        .tool(Work {
            started: Arc::clone(&started),
        })
        .tool(Confirm)
        .task_store(store)
        .limits(Limits::default().with_task_lease(lease))
        .build()
        .expect("the replica's catalog");
    (runtime, started)
}

fn as_alice() -> Context {
    Context::new().with_principal("alice")
}

/// Starts `tool` as a task on `runtime`, as alice.
async fn start(runtime: &Runtime, tool: &str) -> TaskKey {
    let request = Request::new(tool, json!({}))
        .allow_task()
        .asker(AnyClient)
        .context(as_alice());
    let outcome = timeout(NOTICE, runtime.execute(request))
        .await
        .expect("starting the task took too long");
    match outcome.kind {
        OutcomeKind::Task(task) => task.key,
        other => panic!("expected a task, got {other:?}: {:?}", outcome.result),
    }
}

/// Reads the task on `runtime` until `done` holds, for up to [`NOTICE`] (and `extra`).
async fn until(
    runtime: &Runtime,
    key: &TaskKey,
    extra: Duration,
    done: impl Fn(&TaskRecord) -> bool,
) -> TaskRecord {
    let deadline = Instant::now() + NOTICE + extra;
    loop {
        let record = runtime.task(key).await.expect("the task is found");
        if done(&record) {
            return record;
        }
        assert!(Instant::now() < deadline, "the task stayed {record:?}");
        sleep(Duration::from_millis(20)).await;
    }
}

/// A cancel asked on one replica stops the tool running on another: the task ends
/// `cancelled`, seen from both.
pub async fn replica_cancels_anothers_task<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let (a, started) = replica(Arc::clone(&store), LONG);
    let (b, _) = replica(Arc::clone(&store), LONG);
    let key = start(&a, "work").await;
    let seen = until(&b, &key, Duration::ZERO, |record| record.progress.is_some()).await;
    assert_eq!(seen.status, TaskStatus::Working);
    assert_eq!(seen.status_message.as_deref(), Some("working"));
    b.cancel_task(&key).await.expect("b cancels a's task");
    let cancelled = until(&b, &key, Duration::ZERO, |record| {
        record.status.is_terminal()
    })
    .await;
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(
        cancelled.outcome.unwrap().status,
        ExecutionStatus::Cancelled
    );
    assert_eq!(a.task(&key).await.unwrap().status, TaskStatus::Cancelled);
    assert_eq!(started.load(Ordering::SeqCst), 1);
    // Once more, now that it ended: acknowledged, nothing changes.
    assert_eq!(
        b.cancel_task(&key).await.unwrap().status,
        TaskStatus::Cancelled
    );
}

/// Answers delivered on one replica reach the tool waiting on another, one at a time: the task
/// waits until both are in, then completes with them.
pub async fn replica_answers_anothers_task<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let (a, _) = replica(Arc::clone(&store), LONG);
    let (b, _) = replica(Arc::clone(&store), LONG);
    let key = start(&a, "confirm").await;
    let waiting = until(&b, &key, Duration::ZERO, |record| {
        record.pending().count() == 2
    })
    .await;
    assert_eq!(waiting.status, TaskStatus::InputRequired);
    let keys: Vec<String> = waiting.pending().map(|(key, _)| key.to_owned()).collect();
    let decline = json!({ "action": "decline" });
    let first = b
        .answer_task(&key, BTreeMap::from([(keys[0].clone(), accept())]))
        .await
        .unwrap();
    assert_eq!(first.accepted, [keys[0].clone()]);
    let partial = b.task(&key).await.unwrap();
    assert_eq!(partial.status, TaskStatus::InputRequired);
    assert_eq!(
        partial.pending().map(|(key, _)| key).collect::<Vec<_>>(),
        [keys[1].as_str()]
    );
    b.answer_task(&key, BTreeMap::from([(keys[1].clone(), decline)]))
        .await
        .unwrap();
    let done = until(&a, &key, Duration::ZERO, |record| {
        record.status.is_terminal()
    })
    .await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(
        done.outcome.unwrap().result.unwrap(),
        json!({ "first": "accept", "second": "decline" })
    );
}

/// A replica that dies with a task running (its tokio runtime shut down, as when its process is
/// killed) leaves the task `failed` once its lease runs out, for every other replica to see.
pub async fn dead_replicas_task_fails<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let (b, _) = replica(Arc::clone(&store), LONG);
    let shared = Arc::clone(&store);
    let key = tokio::task::spawn_blocking(move || {
        let doomed = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("the doomed replica's runtime");
        let (a, _) = replica(shared, SHORT);
        let key = doomed.block_on(start(&a, "work"));
        // Give its driver a renewal or two, then kill the replica.
        doomed.block_on(sleep(SHORT / 2));
        doomed.shutdown_background();
        key
    })
    .await
    .expect("the doomed replica panicked");
    let failed = until(&b, &key, SHORT, |record| record.status.is_terminal()).await;
    assert_eq!(failed.status, TaskStatus::Failed);
    let outcome = failed.outcome.unwrap();
    assert_eq!(outcome.status, ExecutionStatus::Lost);
    assert_eq!(outcome.result.unwrap_err().code(), codes::EXECUTION_LOST);
    // Another principal still finds nothing of it.
    let mallory = TaskKey::new(Some("mallory"), key.id().clone());
    assert_eq!(
        b.task(&mallory).await.unwrap_err().code(),
        codes::TASK_NOT_FOUND
    );
}
