//! The contract of [`TaskStore`], as scenarios every task store must pass: the store's own
//! calls, and runtimes sharing one store the way replicas do.
//!
//! A store joins with one line in a test file of its crate, naming how to open a fresh, empty
//! store for a [`TaskSetup`]; each scenario becomes a `#[test]` of its own:
//!
//! ```
//! use carmy_core::{MemoryTaskStore, MemoryTaskStoreLimits};
//! use carmy_store::task_conformance::TaskSetup;
//!
//! carmy_store::task_conformance_tests!(|setup: TaskSetup| {
//!     MemoryTaskStore::new(
//!         MemoryTaskStoreLimits::default()
//!             .with_max_tasks_per_principal(setup.max_tasks_per_principal),
//!     )
//! });
//! # fn main() {}
//! ```
//!
//! or runs them all in one test with [`run_all`]. Scenarios use the real clock, with leases and
//! retention of a few hundred milliseconds where they need one to run out; each takes about a
//! second at most.
//!
//! The replica scenarios build two [`Runtime`]s over one store (`Arc<S>`), as two processes
//! would share a database: what one writes (a cancel request, answers) must reach the task the
//! other runs, and a replica that dies (its tokio runtime shut down with the task running)
//! must leave its task `failed` once its lease runs out.

use std::{
    collections::BTreeMap,
    future::Future,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, Ask, AskKind, Asked, Asker, Asks, Carmy, Context, Effect, ErrorCategory,
    ExecutionId, ExecutionStatus, Invocation, Limits, NewTask, NoInput, OutcomeKind, Recorded,
    Request, Runtime, StoreError, TaskEnding, TaskId, TaskKey, TaskLease, TaskProgress, TaskRecord,
    TaskReport, TaskStatus, TaskStore, TaskSupport, Tool, ToolSpec, codes,
};
use serde_json::{Value, json};
use tokio::time::{Instant, sleep, timeout};

/// What a scenario asks of the store it opens.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskSetup {
    /// The most tasks one principal may hold (the store's `max_tasks_per_principal`).
    pub max_tasks_per_principal: usize,
    /// An empty directory of the scenario's own, removed when it ends: where a store kept in
    /// files puts them.
    pub dir: PathBuf,
}

/// How a scenario opens a fresh store: the closure given to
/// [`task_conformance_tests!`](crate::task_conformance_tests), run on a blocking thread.
pub struct TaskOpener<S> {
    open: Arc<dyn Fn(TaskSetup) -> S + Send + Sync>,
    dir: PathBuf,
}

impl<S> Clone for TaskOpener<S> {
    fn clone(&self) -> Self {
        Self {
            open: Arc::clone(&self.open),
            dir: self.dir.clone(),
        }
    }
}

impl<S> std::fmt::Debug for TaskOpener<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskOpener")
            .field("dir", &self.dir)
            .finish()
    }
}

impl<S: TaskStore> TaskOpener<S> {
    /// A fresh store with the default bounds.
    pub async fn open(&self) -> Arc<S> {
        self.open_with(1_000).await
    }

    /// A fresh store holding at most `max_tasks_per_principal` tasks per principal.
    pub async fn open_with(&self, max_tasks_per_principal: usize) -> Arc<S> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = self
            .dir
            .join(format!("store-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).expect("a scratch directory for the store");
        let setup = TaskSetup {
            max_tasks_per_principal,
            dir,
        };
        let open = Arc::clone(&self.open);
        let store = tokio::task::spawn_blocking(move || open(setup))
            .await
            .expect("opening the store panicked");
        Arc::new(store)
    }
}

/// Removes a scenario's scratch directory, even when it fails.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one scenario against stores opened by `open`, on a runtime of its own.
pub fn check<S, F, Fut>(name: &str, open: F, scenario: impl FnOnce(TaskOpener<S>) -> Fut)
where
    S: TaskStore,
    F: Fn(TaskSetup) -> S + Send + Sync + 'static,
    Fut: Future<Output = ()>,
{
    let dir = std::env::temp_dir().join(format!(
        "carmy-task-conformance-{}-{name}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let _scratch = Scratch(dir.clone());
    let opener = TaskOpener {
        open: Arc::new(open),
        dir,
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(scenario(opener));
}

/// Every scenario, one after the other, against stores opened by `open`.
pub fn run_all<S, F>(open: F)
where
    S: TaskStore,
    F: Fn(TaskSetup) -> S + Clone + Send + Sync + 'static,
{
    macro_rules! all {
        ($($name:ident),* $(,)?) => {
            $( check(stringify!($name), open.clone(), $name); )*
        };
    }
    all!(
        status_transitions,
        outcomes_round_trip,
        kept_for_its_ttl_then_forgotten,
        lease_loss_fails_the_task,
        renewals_keep_a_task,
        cancel_reaches_the_holder,
        cancel_of_an_ended_task_changes_nothing,
        answers_reach_the_holder,
        partial_answers_keep_the_task_waiting,
        capacity_fails_closed,
        principals_never_meet,
        replica_cancels_anothers_task,
        replica_answers_anothers_task,
        dead_replicas_task_fails,
    );
}

/// One `#[test]` per scenario of the [`task_conformance`](crate::task_conformance) suite, for
/// the store the closure opens (`Fn(TaskSetup) -> impl TaskStore`); `when = EXPR` as for
/// [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! task_conformance_tests {
    ($open:expr $(,)?) => {
        $crate::task_conformance_tests!($open, when = true);
    };
    ($open:expr, when = $available:expr $(,)?) => {
        $crate::__task_conformance_tests!(
            $open, $available;
            status_transitions,
            outcomes_round_trip,
            kept_for_its_ttl_then_forgotten,
            lease_loss_fails_the_task,
            renewals_keep_a_task,
            cancel_reaches_the_holder,
            cancel_of_an_ended_task_changes_nothing,
            answers_reach_the_holder,
            partial_answers_keep_the_task_waiting,
            capacity_fails_closed,
            principals_never_meet,
            replica_cancels_anothers_task,
            replica_answers_anothers_task,
            dead_replicas_task_fails,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __task_conformance_tests {
    ($open:expr, $available:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                if !$available {
                    return;
                }
                $crate::task_conformance::check(
                    ::core::stringify!($name),
                    $open,
                    $crate::task_conformance::$name,
                );
            }
        )*
    };
}

/// A lease no scenario outlives unless it means to.
const LONG: Duration = Duration::from_secs(60);
/// A lease, or a retention, a scenario waits out.
const SHORT: Duration = Duration::from_millis(300);
/// How long a change may take to be noticed.
const NOTICE: Duration = Duration::from_secs(3);

fn key(principal: &str, id: &str) -> TaskKey {
    TaskKey::new(Some(principal), id)
}

fn new_task(key: &TaskKey, ttl: Duration) -> NewTask {
    NewTask::new(
        key.clone(),
        "slow_compute",
        ExecutionId::from("exec_1"),
        ttl,
        Duration::from_millis(500),
    )
}

async fn within<T>(what: &str, call: impl Future<Output = Result<T, StoreError>>) -> T {
    match timeout(NOTICE, call).await {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => panic!("{what} failed: {error}"),
        Err(_) => panic!("{what} took more than {NOTICE:?}"),
    }
}

async fn create<S: TaskStore>(
    store: &S,
    key: &TaskKey,
    ttl: Duration,
    lease: Duration,
) -> TaskLease {
    let created = within("creating a task", store.create(new_task(key, ttl), lease)).await;
    assert_eq!(&created.record.key, key);
    assert_eq!(created.record.status, TaskStatus::Working);
    created.lease
}

async fn get<S: TaskStore>(store: &S, key: &TaskKey) -> Option<TaskRecord> {
    within("reading a task", store.get(key)).await
}

async fn found<S: TaskStore>(store: &S, key: &TaskKey) -> TaskRecord {
    get(store, key)
        .await
        .unwrap_or_else(|| panic!("task {key:?} was not found"))
}

fn succeeded(value: Value) -> TaskEnding {
    TaskEnding::new(Recorded::new(
        ExecutionId::from("exec_1"),
        ExecutionStatus::Succeeded,
        Ok(value),
    ))
}

fn form(message: &str) -> Ask {
    Ask::input(
        message,
        json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } } }),
    )
}

fn accept() -> Value {
    json!({ "action": "accept", "content": { "confirm": true } })
}

/// A task is working when created, waits for input while a question is unanswered, works
/// again once all are, and ends with the status its outcome says; progress and messages are
/// kept; `updatedAt` moves with each change.
pub async fn status_transitions<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_transitions");
    let lease = create(&*store, &key, LONG, LONG).await;
    let created = found(&*store, &key).await;
    assert_eq!(created.status, TaskStatus::Working);
    assert_eq!(
        (created.tool.as_str(), created.execution_id.as_str()),
        ("slow_compute", "exec_1")
    );
    assert!(created.outcome.is_none() && created.questions.is_empty());

    let report = TaskReport::new(
        Some(TaskProgress {
            done: 1.0,
            total: Some(4.0),
        }),
        Some("one of four".into()),
    );
    within("renewing", store.renew(&lease, LONG, Some(report))).await;
    let reported = found(&*store, &key).await;
    assert_eq!(reported.status_message.as_deref(), Some("one of four"));
    assert_eq!(reported.progress.unwrap().total, Some(4.0));
    assert!(reported.updated_at >= created.updated_at);

    within(
        "asking",
        store.ask(&lease, Asks::new().with("confirm.1", form("Sure?"))),
    )
    .await;
    let waiting = found(&*store, &key).await;
    assert_eq!(waiting.status, TaskStatus::InputRequired);
    assert_eq!(
        waiting.pending().map(|(key, _)| key).collect::<Vec<_>>(),
        ["confirm.1"]
    );
    assert_eq!(waiting.questions.iter().next().unwrap().1, &form("Sure?"));

    let answer = BTreeMap::from([("confirm.1".to_owned(), accept())]);
    within("answering", store.respond(&key, answer))
        .await
        .unwrap();
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);
    within("closing the questions", store.ask(&lease, Asks::new())).await;
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);

    within(
        "finishing",
        store.finish(&lease, succeeded(json!({ "ok": true }))),
    )
    .await;
    let done = found(&*store, &key).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert!(done.questions.is_empty() && done.pending().next().is_none());
    assert_eq!(done.outcome.unwrap().result.unwrap(), json!({ "ok": true }));
    assert!(matches!(
        store.finish(&lease, succeeded(json!(2))).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.renew(&lease, LONG, None).await,
        Err(StoreError::LeaseLost)
    ));
}

/// What a task ended with reads back exactly, errors and the status they imply included.
pub async fn outcomes_round_trip<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let endings = [
        (
            succeeded(json!({ "n": 1.5, "list": [1, "two", null] })),
            TaskStatus::Completed,
        ),
        (
            TaskEnding::new(Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Failed,
                Err(
                    AgentError::new(ErrorCategory::Conflict, "OUT_OF_STOCK", "none left")
                        .with_retryable(true)
                        .with_details(json!({ "sku": "MOUSE-1" }))
                        .with_next_tool("search"),
                ),
            )),
            TaskStatus::Completed,
        ),
        (
            TaskEnding::new(Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Cancelled,
                Err(AgentError::new(
                    ErrorCategory::Cancelled,
                    codes::CANCELLED,
                    "stopped",
                )),
            )),
            TaskStatus::Cancelled,
        ),
        (
            TaskEnding::new(Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Panicked,
                Err(AgentError::internal("the tool panicked")),
            )),
            TaskStatus::Failed,
        ),
    ];
    for (n, (ending, status)) in endings.into_iter().enumerate() {
        let key = key("alice", &format!("task_outcome_{n}"));
        let lease = create(&*store, &key, LONG, LONG).await;
        within("finishing", store.finish(&lease, ending.clone())).await;
        let record = found(&*store, &key).await;
        assert_eq!(record.status, status);
        assert_eq!(record.outcome.as_ref(), Some(ending.outcome()));
    }
}

/// A task that ended is kept for its `ttl`, counted from its end (not its start), then
/// forgotten; `sweep` forgets it too, and says so.
pub async fn kept_for_its_ttl_then_forgotten<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_ttl");
    let lease = create(&*store, &key, SHORT, LONG).await;
    // Running for longer than its ttl does not expire it.
    sleep(SHORT + Duration::from_millis(100)).await;
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);
    within("finishing", store.finish(&lease, succeeded(json!(1)))).await;
    sleep(SHORT / 3).await;
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Completed);
    sleep(SHORT + Duration::from_millis(100)).await;
    assert!(get(&*store, &key).await.is_none(), "kept past its ttl");

    let swept = self::key("alice", "task_swept");
    let lease = create(&*store, &swept, SHORT, LONG).await;
    within("finishing", store.finish(&lease, succeeded(json!(2)))).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    let forgotten = within("sweeping", store.sweep()).await;
    assert!(forgotten >= 1, "the sweep forgot {forgotten} tasks");
    assert!(get(&*store, &swept).await.is_none());
}

/// A task whose holder stops renewing fails once its lease runs out: `failed`, its execution
/// `lost` with `EXECUTION_LOST`; the late holder's calls fail with `LeaseLost` and change
/// nothing.
pub async fn lease_loss_fails_the_task<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_lost");
    let lease = create(&*store, &key, LONG, SHORT).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    let lost = found(&*store, &key).await;
    assert_eq!(lost.status, TaskStatus::Failed);
    let outcome = lost.outcome.expect("a failed task says why");
    assert_eq!(outcome.status, ExecutionStatus::Lost);
    assert_eq!(outcome.result.unwrap_err().code(), codes::EXECUTION_LOST);
    assert!(matches!(
        store.renew(&lease, LONG, None).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.ask(&lease, Asks::new()).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.finish(&lease, succeeded(json!("late"))).await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Failed);

    // A lost task is kept for its ttl like any task that ended, and the sweep settles the
    // ones nobody looked at.
    let unseen = self::key("alice", "task_lost_unseen");
    create(&*store, &unseen, LONG, SHORT).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    within("sweeping", store.sweep()).await;
    assert_eq!(found(&*store, &unseen).await.status, TaskStatus::Failed);
}

/// A holder that renews keeps its task, however long the task runs.
pub async fn renewals_keep_a_task<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_renewed");
    let lease = create(&*store, &key, LONG, SHORT).await;
    let until = Instant::now() + SHORT * 3;
    while Instant::now() < until {
        sleep(SHORT / 3).await;
        within("renewing", store.renew(&lease, SHORT, None)).await;
    }
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);
    within("finishing", store.finish(&lease, succeeded(json!(1)))).await;
}

/// A cancel request is recorded (the task runs on until its holder stops it), wakes the
/// holder's `changed`, and is in every renewal's signals from then on.
pub async fn cancel_reaches_the_holder<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_cancel");
    let lease = create(&*store, &key, LONG, LONG).await;
    assert!(
        !within("renewing", store.renew(&lease, LONG, None))
            .await
            .cancel_requested
    );
    let changed = store.changed(&lease);
    let cancelled = within("cancelling", store.cancel(&key)).await.unwrap();
    assert!(cancelled.cancel_requested);
    assert_eq!(cancelled.status, TaskStatus::Working);
    timeout(NOTICE, changed)
        .await
        .expect("the holder was not told of the cancel request");
    for _ in 0..2 {
        assert!(
            within("renewing", store.renew(&lease, LONG, None))
                .await
                .cancel_requested
        );
    }
    let ending = TaskEnding::new(Recorded::new(
        ExecutionId::from("exec_1"),
        ExecutionStatus::Cancelled,
        Err(AgentError::new(
            ErrorCategory::Cancelled,
            codes::CANCELLED,
            "cancelled",
        )),
    ));
    within("finishing", store.finish(&lease, ending)).await;
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Cancelled);
}

/// Cancelling a task that ended changes nothing and succeeds, as often as asked.
pub async fn cancel_of_an_ended_task_changes_nothing<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_cancel_ended");
    let lease = create(&*store, &key, LONG, LONG).await;
    within("finishing", store.finish(&lease, succeeded(json!("done")))).await;
    let before = found(&*store, &key).await;
    for _ in 0..3 {
        let after = within("cancelling", store.cancel(&key)).await.unwrap();
        assert_eq!(after.status, TaskStatus::Completed);
        assert_eq!(after.outcome, before.outcome);
    }
    assert!(
        within(
            "cancelling nothing",
            store.cancel(&self::key("alice", "task_none"))
        )
        .await
        .is_none()
    );
}

/// Answers to waiting questions wake the holder and are in its renewals; keys that name nothing
/// waiting (unknown, answered already) are ignored and named; the first answer stands.
pub async fn answers_reach_the_holder<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_answers");
    let lease = create(&*store, &key, LONG, LONG).await;
    within(
        "asking",
        store.ask(&lease, Asks::new().with("confirm.1", form("Sure?"))),
    )
    .await;
    let changed = store.changed(&lease);
    let responded = within(
        "answering",
        store.respond(
            &key,
            BTreeMap::from([
                ("confirm.1".to_owned(), accept()),
                ("nope".to_owned(), json!(1)),
            ]),
        ),
    )
    .await
    .unwrap();
    assert_eq!(responded.accepted, ["confirm.1"]);
    assert_eq!(responded.ignored, ["nope"]);
    timeout(NOTICE, changed)
        .await
        .expect("the holder was not told of the answers");
    let signals = within("renewing", store.renew(&lease, LONG, None)).await;
    assert_eq!(
        signals.answers,
        BTreeMap::from([("confirm.1".to_owned(), accept())])
    );
    let again = within(
        "answering again",
        store.respond(
            &key,
            BTreeMap::from([("confirm.1".to_owned(), json!("no"))]),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        (again.accepted.len(), again.ignored.as_slice()),
        (0, &["confirm.1".to_owned()][..])
    );
    let signals = within("renewing", store.renew(&lease, LONG, None)).await;
    assert_eq!(signals.answers["confirm.1"], accept());
    // The holder closes what it took; answering a closed question is ignored.
    within("closing", store.ask(&lease, Asks::new())).await;
    let closed = within(
        "answering a closed question",
        store.respond(&key, BTreeMap::from([("confirm.1".to_owned(), accept())])),
    )
    .await
    .unwrap();
    assert_eq!(closed.ignored, ["confirm.1"]);
    within("finishing", store.finish(&lease, succeeded(json!(1)))).await;
    let ended = within(
        "answering an ended task",
        store.respond(&key, BTreeMap::from([("confirm.1".to_owned(), accept())])),
    )
    .await
    .unwrap();
    assert_eq!(ended.ignored, ["confirm.1"]);
}

/// Two questions at once: one answer leaves the task waiting, with only the other pending;
/// the second makes it work again. A question added beside a pending one keeps that one's
/// answer once given.
pub async fn partial_answers_keep_the_task_waiting<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_partial");
    let lease = create(&*store, &key, LONG, LONG).await;
    let two = Asks::new()
        .with("first.1", form("First?"))
        .with("second.2", form("Second?"));
    within("asking", store.ask(&lease, two.clone())).await;
    within(
        "answering the first",
        store.respond(&key, BTreeMap::from([("first.1".to_owned(), accept())])),
    )
    .await
    .unwrap();
    let partial = found(&*store, &key).await;
    assert_eq!(partial.status, TaskStatus::InputRequired);
    assert_eq!(
        partial.pending().map(|(key, _)| key).collect::<Vec<_>>(),
        ["second.2"]
    );
    // A third question joins the two: the first's answer is kept.
    within(
        "asking a third",
        store.ask(&lease, two.with("third.3", form("Third?"))),
    )
    .await;
    let three = found(&*store, &key).await;
    assert_eq!(three.answers.keys().collect::<Vec<_>>(), ["first.1"]);
    assert_eq!(three.pending().count(), 2);
    within(
        "answering the rest",
        store.respond(
            &key,
            BTreeMap::from([
                ("second.2".to_owned(), accept()),
                ("third.3".to_owned(), accept()),
            ]),
        ),
    )
    .await
    .unwrap();
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);
    let signals = within("renewing", store.renew(&lease, LONG, None)).await;
    assert_eq!(signals.answers.len(), 3);
}

/// A principal at its bound is refused new tasks (`Full`), and nothing it holds is forgotten
/// to make room; other principals are not affected.
pub async fn capacity_fails_closed<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open_with(2).await;
    let done = key("alice", "task_a");
    let lease = create(&*store, &done, LONG, LONG).await;
    within("finishing", store.finish(&lease, succeeded(json!("a")))).await;
    let running = key("alice", "task_b");
    create(&*store, &running, LONG, LONG).await;
    for _ in 0..3 {
        match timeout(
            NOTICE,
            store.create(new_task(&key("alice", "task_c"), LONG), LONG),
        )
        .await
        {
            Ok(Err(StoreError::Full(_))) => {}
            other => panic!(
                "a full share must fail closed, got {:?}",
                other.map(|r| r.map(drop))
            ),
        }
    }
    assert_eq!(found(&*store, &done).await.status, TaskStatus::Completed);
    assert_eq!(found(&*store, &running).await.status, TaskStatus::Working);
    create(&*store, &key("bob", "task_c"), LONG, LONG).await;
}

/// A task is its owner's: another principal holding its id finds nothing, cancels nothing and
/// answers nothing; the anonymous principal is a principal too.
pub async fn principals_never_meet<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let id = TaskId::generate();
    let alice = TaskKey::new(Some("alice"), id.clone());
    let lease = create(&*store, &alice, LONG, LONG).await;
    within(
        "asking",
        store.ask(&lease, Asks::new().with("confirm.1", form("Sure?"))),
    )
    .await;
    for other in [
        TaskKey::new(Some("mallory"), id.clone()),
        TaskKey::new(None, id.clone()),
        TaskKey::new(Some("alice "), id.clone()),
    ] {
        assert!(get(&*store, &other).await.is_none());
        assert!(within("cancelling", store.cancel(&other)).await.is_none());
        let answers = BTreeMap::from([("confirm.1".to_owned(), accept())]);
        assert!(
            within("answering", store.respond(&other, answers))
                .await
                .is_none()
        );
    }
    let record = found(&*store, &alice).await;
    assert!(!record.cancel_requested);
    assert_eq!(record.status, TaskStatus::InputRequired);
    // The same id under another principal is another task.
    let bob = TaskKey::new(Some("bob"), id);
    create(&*store, &bob, LONG, LONG).await;
    assert_eq!(found(&*store, &bob).await.status, TaskStatus::Working);
}

// --- Replicas: runtimes sharing one store -------------------------------------------------------

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
