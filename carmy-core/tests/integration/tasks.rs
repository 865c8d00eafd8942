//! Calls that become tasks, by rule: when a call may become one and when it must, what its
//! caller is answered, what the task records (progress, questions, outcome), and that a task is
//! an execution like any other (deadline, idempotency, history). The store's own contract, and
//! replicas sharing one, are `carmy-store`'s `task_conformance` suite.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, Answers, Ask, AskKind, Asked, Asker, Asks, Carmy, Effect, ExecutionStatus,
    Invocation, Limits, MemoryTaskStore, MemoryTaskStoreLimits, NoInput, Outcome, OutcomeKind,
    Pending, Request, Runtime, TaskKey, TaskRecord, TaskStatus, TaskSupport, Tool, ToolSpec, codes,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize, JsonSchema)]
struct Work {
    /// How long the tool works.
    millis: u64,
}

/// Works for a while, reporting progress; counts its runs.
struct Slow(Arc<AtomicUsize>);

impl Tool for Slow {
    type Input = Work;
    type Output = Value;
    const SPEC: ToolSpec = ToolSpec::new("slow", Effect::Write)
        .task(TaskSupport::Optional)
        .timeout(Duration::from_millis(800));

    async fn run(&self, input: Work, invocation: Invocation) -> Result<Value, AgentError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let context = invocation.context();
        for step in 1..=4 {
            tokio::time::sleep(Duration::from_millis(input.millis / 4)).await;
            context.progress(
                f64::from(step),
                Some(4.0),
                Some(&format!("step {step} of 4")),
            );
        }
        Ok(json!({ "worked_ms": input.millis }))
    }
}

/// Runs only as a task.
struct Batch;

impl Tool for Batch {
    type Input = NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("batch", Effect::Read).task(TaskSupport::Required);

    async fn run(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok("done".into())
    }
}

/// Never a task.
struct Quick;

impl Tool for Quick {
    type Input = NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("quick", Effect::None);

    async fn run(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok("quick".into())
    }
}

/// Asks a name and a colour together, then greets.
struct Greet;

impl Tool for Greet {
    type Input = NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("greet", Effect::None).task(TaskSupport::Optional);

    async fn run(&self, _: NoInput, invocation: Invocation) -> Result<String, AgentError> {
        let form = json!({ "type": "object", "properties": { "v": { "type": "string" } } });
        let answers = invocation
            .context()
            .ask(
                Asks::new()
                    .with("name", Ask::input("Name?", form.clone()))
                    .with("colour", Ask::input("Colour?", form)),
            )
            .await?;
        let value = |key| -> Result<String, AgentError> {
            Ok(answers.input(key)?.content.unwrap_or_default()["v"]
                .as_str()
                .unwrap_or_default()
                .to_owned())
        };
        Ok(format!("{} likes {}", value("name")?, value("colour")?))
    }
}

/// Asks a name first, as a plain call, then works long enough to become a task.
struct Gather;

impl Tool for Gather {
    type Input = NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("gather", Effect::None)
        .task(TaskSupport::Required)
        .task_after(Duration::from_millis(100));

    async fn run(&self, _: NoInput, invocation: Invocation) -> Result<String, AgentError> {
        let answer = invocation
            .context()
            .ask_input("name", "Name?", json!({ "type": "object" }))
            .await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let content = answer.content.unwrap_or_default();
        Ok(format!(
            "Hello, {}!",
            content["name"].as_str().unwrap_or("?")
        ))
    }
}

/// Done at once, well within its `task_after`.
struct Brief;

impl Tool for Brief {
    type Input = NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("brief", Effect::None)
        .task(TaskSupport::Optional)
        .task_after(Duration::from_millis(500));

    async fn run(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok("brief".into())
    }
}

/// Panics.
struct Boom;

impl Tool for Boom {
    type Input = NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("boom", Effect::None).task(TaskSupport::Optional);

    async fn run(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        panic!("boom")
    }
}

/// A client on a stateless protocol: it answers what it was given, and says "on the next try"
/// for the rest.
struct Client(BTreeMap<String, Value>);

impl Asker for Client {
    fn can_ask(&self, _: AskKind) -> bool {
        true
    }

    async fn ask(&self, asks: &Asks) -> Asked {
        let mut open = Asks::new();
        let mut answers = BTreeMap::new();
        for (key, ask) in asks.iter() {
            match self.0.get(key) {
                Some(answer) => {
                    answers.insert(key.to_owned(), answer.clone());
                }
                None => open = open.with(key, ask.clone()),
            }
        }
        if open.is_empty() {
            Asked::Answered(Answers::new(answers))
        } else {
            Asked::Later(Pending::new(open, None))
        }
    }
}

fn client() -> Client {
    Client(BTreeMap::new())
}

fn runtime_with(store: Arc<MemoryTaskStore>) -> (Runtime, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = Carmy::new()
        .tool(Slow(Arc::clone(&runs)))
        .tool(Batch)
        .tool(Quick)
        .tool(Greet)
        .tool(Gather)
        .tool(Brief)
        .tool(Boom)
        .task_store(store)
        .build()
        .unwrap();
    (runtime, runs)
}

fn runtime() -> (Runtime, Arc<AtomicUsize>) {
    runtime_with(Arc::default())
}

fn task_call(tool: &str, arguments: Value) -> Request {
    Request::new(tool, arguments).allow_task().asker(client())
}

/// The task an outcome handed over.
fn task_of(outcome: &Outcome) -> TaskRecord {
    match &outcome.kind {
        OutcomeKind::Task(task) => (**task).clone(),
        other => panic!("expected a task, got {other:?} ({:?})", outcome.result),
    }
}

/// Reads the task until `done` says so, for up to 3 s.
async fn wait_for(
    runtime: &Runtime,
    key: &TaskKey,
    done: impl Fn(&TaskRecord) -> bool,
) -> TaskRecord {
    for _ in 0..300 {
        let record = runtime.task(key).await.unwrap();
        if done(&record) {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the task did not get there: {:?}", runtime.task(key).await);
}

async fn ended(runtime: &Runtime, key: &TaskKey) -> TaskRecord {
    wait_for(runtime, key, |record| record.status.is_terminal()).await
}

#[tokio::test]
async fn a_call_the_caller_can_follow_becomes_a_task_when_its_tool_starts() {
    let (runtime, runs) = runtime();
    let outcome = runtime
        .execute(task_call("slow", json!({ "millis": 200 })))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Running);
    let task = task_of(&outcome);
    assert_eq!(
        outcome.result.as_ref().unwrap()["task_id"],
        task.key.id().as_str()
    );
    assert_eq!(
        (task.status, task.tool.as_str()),
        (TaskStatus::Working, "slow")
    );
    assert_eq!(task.execution_id, outcome.execution_id);
    // Found at once: the task was created before the caller heard of it.
    let key = task.key.clone();
    assert_eq!(
        runtime.task(&key).await.unwrap().status,
        TaskStatus::Working
    );
    assert_eq!(
        runtime.execution(&outcome.execution_id).unwrap().status,
        ExecutionStatus::Running
    );
    let done = ended(&runtime, &key).await;
    assert_eq!(done.status, TaskStatus::Completed);
    let recorded = done.outcome.unwrap();
    assert_eq!(recorded.status, ExecutionStatus::Succeeded);
    assert_eq!(recorded.result.unwrap(), json!({ "worked_ms": 200 }));
    assert_eq!(recorded.execution_id, outcome.execution_id);
    assert_eq!(done.progress.unwrap().done, 4.0);
    assert_eq!(done.status_message.as_deref(), Some("step 4 of 4"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The history has it too, once it ended.
    wait_until_recorded(&runtime, &outcome).await;
}

async fn wait_until_recorded(runtime: &Runtime, outcome: &Outcome) {
    for _ in 0..100 {
        if runtime.execution(&outcome.execution_id).unwrap().status == ExecutionStatus::Succeeded {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the history never recorded the task's end");
}

#[tokio::test]
async fn a_caller_that_cannot_follow_a_task_gets_a_plain_call_or_a_refusal() {
    let (runtime, runs) = runtime();
    let plain = runtime
        .execute(Request::new("slow", json!({ "millis": 4 })))
        .await;
    assert_eq!(plain.kind, OutcomeKind::Result);
    assert_eq!(plain.result.unwrap(), json!({ "worked_ms": 4 }));
    let refused = runtime.execute(Request::new("batch", json!({}))).await;
    assert_eq!(refused.unwrap_error_code(), codes::TASK_REQUIRED);
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    assert_eq!(refused.kind, OutcomeKind::Result);
    assert_eq!(
        runtime.execution(&refused.execution_id).unwrap().status,
        ExecutionStatus::Rejected,
        "refusals are recorded"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A tool that never runs as a task is a plain call for any caller.
    let quick = runtime.execute(task_call("quick", json!({}))).await;
    assert_eq!(quick.result.unwrap(), json!("quick"));
}

#[tokio::test]
async fn refusals_before_the_tool_starts_are_answered_in_the_call() {
    let (runtime, runs) = runtime();
    let invalid = runtime
        .execute(task_call("slow", json!({ "millis": "soon" })))
        .await;
    assert_eq!(invalid.unwrap_error_code(), codes::INVALID_ARGUMENTS);
    assert_eq!(invalid.kind, OutcomeKind::Result);
    let unknown = runtime.execute(task_call("nope", json!({}))).await;
    assert_eq!(unknown.unwrap_error_code(), codes::TOOL_NOT_FOUND);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_task_that_asks_waits_for_every_answer_then_goes_on() {
    let (runtime, _) = runtime();
    let outcome = runtime.execute(task_call("greet", json!({}))).await;
    let key = task_of(&outcome).key;
    let waiting = wait_for(&runtime, &key, |r| r.status == TaskStatus::InputRequired).await;
    let keys: Vec<String> = waiting.pending().map(|(key, _)| key.to_owned()).collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(
        keys[0].starts_with("name.") && keys[1].starts_with("colour."),
        "{keys:?}"
    );
    // One answer, and an unknown key: the task still waits for the other.
    let answer = |v: &str| json!({ "action": "accept", "content": { "v": v } });
    let responded = runtime
        .answer_task(
            &key,
            BTreeMap::from([(keys[0].clone(), answer("Ada")), ("nope".into(), json!({}))]),
        )
        .await
        .unwrap();
    assert_eq!(
        (responded.accepted, responded.ignored),
        (vec![keys[0].clone()], vec!["nope".into()])
    );
    let partial = runtime.task(&key).await.unwrap();
    assert_eq!(partial.status, TaskStatus::InputRequired);
    let pending: Vec<&str> = partial.pending().map(|(key, _)| key).collect();
    assert_eq!(pending, [keys[1].as_str()]);
    // Answered twice: the first answer stands.
    let again = runtime
        .answer_task(&key, BTreeMap::from([(keys[0].clone(), answer("Bob"))]))
        .await
        .unwrap();
    assert_eq!(again.ignored, [keys[0].clone()]);
    runtime
        .answer_task(&key, BTreeMap::from([(keys[1].clone(), answer("green"))]))
        .await
        .unwrap();
    let done = ended(&runtime, &key).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(
        done.outcome.unwrap().result.unwrap(),
        json!("Ada likes green")
    );
    assert!(done.questions.is_empty());
}

#[tokio::test]
async fn a_call_within_its_task_after_is_answered_as_a_plain_call() {
    let (runtime, _) = runtime();
    // Round one: the question ends the call, asking; no task exists.
    let asking = runtime.execute(task_call("gather", json!({}))).await;
    assert_eq!(asking.status, ExecutionStatus::InputRequired);
    assert!(
        matches!(asking.kind, OutcomeKind::InputRequired(_)),
        "{:?}",
        asking.kind
    );
    // Round two, with the answer: the tool works past its `task_after` and becomes a task.
    let answered = BTreeMap::from([(
        "name".to_owned(),
        json!({ "action": "accept", "content": { "name": "Alice" } }),
    )]);
    let outcome = runtime
        .execute(
            Request::new("gather", json!({}))
                .allow_task()
                .asker(Client(answered)),
        )
        .await;
    let key = task_of(&outcome).key;
    let done = ended(&runtime, &key).await;
    assert_eq!(
        done.outcome.unwrap().result.unwrap(),
        json!("Hello, Alice!")
    );
}

#[tokio::test]
async fn a_call_done_within_its_task_after_never_becomes_a_task() {
    let store = Arc::new(MemoryTaskStore::default());
    let (runtime, _) = runtime_with(Arc::clone(&store));
    let outcome = runtime.execute(task_call("brief", json!({}))).await;
    assert_eq!(outcome.kind, OutcomeKind::Result);
    assert_eq!(outcome.result.unwrap(), json!("brief"));
    assert!(store.is_empty(), "no task was created");
}

#[tokio::test]
async fn the_caller_cancels_a_call_but_not_a_task() {
    let (runtime, _) = runtime();
    let token = carmy_core::CancellationToken::new();
    let outcome = runtime
        .execute(task_call("slow", json!({ "millis": 400 })).cancellation(token.clone()))
        .await;
    let key = task_of(&outcome).key;
    // What cancels a call (the client went away) does not reach the task.
    token.cancel();
    let done = ended(&runtime, &key).await;
    assert_eq!(done.status, TaskStatus::Completed);
    // The task's own cancellation does.
    let outcome = runtime
        .execute(task_call("slow", json!({ "millis": 2000 })))
        .await;
    let key = task_of(&outcome).key;
    runtime.cancel_task(&key).await.unwrap();
    let done = ended(&runtime, &key).await;
    assert_eq!(done.status, TaskStatus::Cancelled);
    assert_eq!(done.outcome.unwrap().status, ExecutionStatus::Cancelled);
    // Cancelling what ended changes nothing, and succeeds.
    let again = runtime.cancel_task(&key).await.unwrap();
    assert_eq!(again.status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn a_panic_fails_the_task_and_a_deadline_completes_it_with_the_error() {
    let (runtime, _) = runtime();
    let key = task_of(&runtime.execute(task_call("boom", json!({}))).await).key;
    let done = ended(&runtime, &key).await;
    assert_eq!(done.status, TaskStatus::Failed);
    assert_eq!(
        done.outcome.unwrap().result.unwrap_err().code(),
        codes::TOOL_PANIC
    );
    // `slow` times out after 800 ms: its task completes with the runtime's answer, as a call would.
    let outcome = runtime
        .execute(task_call("slow", json!({ "millis": 60_000 })))
        .await;
    let key = task_of(&outcome).key;
    let done = ended(&runtime, &key).await;
    assert_eq!(done.status, TaskStatus::Completed);
    let recorded = done.outcome.unwrap();
    assert_eq!(recorded.status, ExecutionStatus::TimedOut);
    assert_eq!(recorded.result.unwrap_err().code(), codes::TIMEOUT);
}

#[tokio::test]
async fn a_task_runs_once_per_request_id() {
    let (runtime, runs) = runtime();
    let call = || task_call("slow", json!({ "millis": 200 })).request_id("r-1");
    let first = runtime.execute(call()).await;
    let key = task_of(&first).key;
    // A retry while the task runs waits for it, then replays its outcome.
    let retry = runtime.execute(call()).await;
    assert_eq!(retry.status, ExecutionStatus::Replayed);
    assert_eq!(retry.execution_id, first.execution_id);
    assert_eq!(retry.result.unwrap(), json!({ "worked_ms": 200 }));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(ended(&runtime, &key).await.status, TaskStatus::Completed);
}

#[tokio::test]
async fn a_task_the_store_cannot_hold_is_refused_before_the_tool_starts() {
    let store = Arc::new(MemoryTaskStore::new(
        MemoryTaskStoreLimits::default().with_tasks(|tasks| tasks.with_max(1)),
    ));
    let (runtime, runs) = runtime_with(store);
    let first = runtime
        .execute(task_call("slow", json!({ "millis": 400 })))
        .await;
    assert!(first.task().is_some());
    let refused = runtime
        .execute(task_call("slow", json!({ "millis": 4 })))
        .await;
    assert_eq!(refused.unwrap_error_code(), codes::CAPACITY);
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn tasks_are_their_owners() {
    let (runtime, _) = runtime();
    let alice = carmy_core::Context::new().with_principal("alice");
    let outcome = runtime
        .execute(task_call("slow", json!({ "millis": 40 })).context(alice))
        .await;
    let task = task_of(&outcome);
    assert_eq!(task.key.principal(), "alice");
    let mallory = TaskKey::new(Some("mallory"), task.key.id().clone());
    for error in [
        runtime.task(&mallory).await.unwrap_err(),
        runtime.cancel_task(&mallory).await.unwrap_err(),
        runtime
            .answer_task(&mallory, BTreeMap::new())
            .await
            .unwrap_err(),
    ] {
        assert_eq!(error.code(), codes::TASK_NOT_FOUND);
    }
    let anonymous = TaskKey::new(None, task.key.id().clone());
    assert!(runtime.task(&anonymous).await.is_err());
    assert_eq!(
        ended(&runtime, &task.key).await.status,
        TaskStatus::Completed
    );
}

#[tokio::test]
async fn task_limits_reach_the_record() {
    let runtime = Carmy::new()
        .tool(Batch)
        .limits(
            Limits::default()
                .with_task_ttl(Duration::from_secs(5))
                .with_task_poll_interval(Duration::from_millis(250)),
        )
        .build()
        .unwrap();
    let outcome = runtime
        .execute(Request::new("batch", json!({})).allow_task())
        .await;
    let task = task_of(&outcome);
    assert_eq!(task.ttl, Duration::from_secs(5));
    assert_eq!(task.poll_interval, Duration::from_millis(250));
}

#[test]
fn task_after_needs_a_tool_that_may_run_as_a_task() {
    struct Late;
    impl Tool for Late {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec =
            ToolSpec::new("late", Effect::None).task_after(Duration::from_millis(5));
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }
    let error = Carmy::new().tool(Late).build().unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot build the catalog: tool `late` sets `task_after` but never runs as a task: \
         declare `task` as `optional` or `required`"
    );
}
