//! A tool's questions to its caller's host, by rule: answered in the call, or the execution
//! stops at its ask and runs again with the answers; the request id is released, not
//! recorded, while it waits; a host that cannot answer fails the call with `CANNOT_ASK`.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use carmy_core::{
    AgentError, Answers, Ask, AskKind, Asked, Asker, Asks, Carmy, Context, Effect, ExecutionStatus,
    Invocation, NoInput, OutcomeKind, Pending, Request, Runtime, Tool, ToolSpec, codes,
};
use serde_json::{Value, json};

/// Asks a name, then counts what ran after the ask (the "effect").
struct Greet {
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

impl Tool for Greet {
    type Input = NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("greet", Effect::Write);

    async fn run(&self, _: NoInput, invocation: Invocation) -> Result<String, AgentError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let form = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
        let answer = invocation
            .context()
            .ask_input("name", "What is your name?", form)
            .await?;
        self.finished.fetch_add(1, Ordering::SeqCst);
        let name = answer
            .content
            .and_then(|content| content.get("name").cloned());
        Ok(format!("Hello, {}!", name.unwrap_or(Value::Null)))
    }
}

/// Answers from a map, or says "on the next try" for what it lacks, the way a stateless
/// protocol does; can refuse a kind.
struct Host {
    known: BTreeMap<String, Value>,
    can_input: bool,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Asker for Host {
    fn can_ask(&self, kind: AskKind) -> bool {
        kind != AskKind::Input || self.can_input
    }

    async fn ask(&self, asks: &Asks) -> Asked {
        let mut answers = BTreeMap::new();
        let mut open = Asks::new();
        for (key, ask) in asks.iter() {
            self.asked.lock().unwrap().push(key.to_owned());
            match self.known.get(key) {
                Some(answer) => {
                    answers.insert(key.to_owned(), answer.clone());
                }
                None => open = open.with(key, ask.clone()),
            }
        }
        if open.is_empty() {
            Asked::Answered(Answers::new(answers))
        } else {
            Asked::Later(Pending::new(open, Some("state-1".into())))
        }
    }
}

fn runtime() -> (Runtime, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (started, finished) = (Arc::default(), Arc::default());
    let tool = Greet {
        started: Arc::clone(&started),
        finished: Arc::clone(&finished),
    };
    (Carmy::new().tool(tool).build().unwrap(), started, finished)
}

fn host(known: &[(&str, Value)]) -> Host {
    Host {
        known: known
            .iter()
            .map(|(key, value)| ((*key).to_owned(), value.clone()))
            .collect(),
        can_input: true,
        asked: Arc::default(),
    }
}

#[tokio::test]
async fn an_ask_answered_later_stops_the_tool_there_and_releases_the_request_id() {
    let (runtime, started, finished) = runtime();
    let first = runtime
        .execute(
            Request::new("greet", json!({}))
                .request_id("r-1")
                .asker(host(&[])),
        )
        .await;
    assert_eq!(first.status, ExecutionStatus::InputRequired);
    assert_eq!(first.unwrap_error_code(), codes::INPUT_REQUIRED);
    let OutcomeKind::InputRequired(pending) = &first.kind else {
        panic!("the questions: {first:?}")
    };
    let keys: Vec<_> = pending.asks().iter().map(|(key, _)| key).collect();
    assert_eq!(keys, ["name"]);
    assert_eq!(pending.state(), Some("state-1"));
    assert_eq!(started.load(Ordering::SeqCst), 1);
    assert_eq!(
        finished.load(Ordering::SeqCst),
        0,
        "nothing after the ask ran"
    );

    // The retry with the answer, under the same request id, runs the tool again and finishes.
    let answer = json!({ "action": "accept", "content": { "name": "Alice" } });
    let second = runtime
        .execute(
            Request::new("greet", json!({}))
                .request_id("r-1")
                .asker(host(&[("name", answer)])),
        )
        .await;
    assert_eq!(second.status, ExecutionStatus::Succeeded, "{second:?}");
    assert_eq!(second.result.as_ref().unwrap(), "Hello, \"Alice\"!");
    assert_eq!(started.load(Ordering::SeqCst), 2);
    assert_eq!(finished.load(Ordering::SeqCst), 1);

    // Now the request id holds the finished outcome: a third try replays it, running nothing.
    let third = runtime
        .execute(
            Request::new("greet", json!({}))
                .request_id("r-1")
                .asker(host(&[])),
        )
        .await;
    assert_eq!(third.status, ExecutionStatus::Replayed);
    assert_eq!(third.execution_id, second.execution_id);
    assert_eq!(started.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_host_that_cannot_answer_fails_the_call_with_cannot_ask() {
    let (runtime, _, finished) = runtime();
    let mut refusing = host(&[]);
    refusing.can_input = false;
    let asked = Arc::clone(&refusing.asked);
    let outcome = runtime
        .execute(Request::new("greet", json!({})).asker(refusing))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Failed);
    assert_eq!(outcome.unwrap_error_code(), codes::CANNOT_ASK);
    assert_eq!(
        outcome.error().unwrap().details().unwrap()["ask"],
        "input",
        "says what could not be asked"
    );
    assert!(asked.lock().unwrap().is_empty(), "nothing was asked");
    assert_eq!(finished.load(Ordering::SeqCst), 0);

    // Without any asker (a host that asks nothing), the same.
    let outcome = runtime.execute(Request::new("greet", json!({}))).await;
    assert_eq!(outcome.unwrap_error_code(), codes::CANNOT_ASK);
}

#[tokio::test]
async fn the_tool_tells_what_its_host_can_answer() {
    struct Probe;
    impl Tool for Probe {
        type Input = NoInput;
        type Output = Vec<bool>;
        const SPEC: ToolSpec = ToolSpec::new("probe", Effect::None);
        async fn run(&self, _: NoInput, invocation: Invocation) -> Result<Vec<bool>, AgentError> {
            let context: &Context = invocation.context();
            Ok([AskKind::Input, AskKind::Sample, AskKind::Roots]
                .into_iter()
                .map(|kind| context.can_ask(kind))
                .collect())
        }
    }
    let runtime = Carmy::new().tool(Probe).build().unwrap();
    let mut partial = host(&[]);
    partial.can_input = false;
    let outcome = runtime
        .execute(Request::new("probe", json!({})).asker(partial))
        .await;
    assert_eq!(outcome.result.unwrap(), json!([false, true, true]));
    let outcome = runtime.execute(Request::new("probe", json!({}))).await;
    assert_eq!(outcome.result.unwrap(), json!([false, false, false]));
}

#[tokio::test]
async fn answers_in_the_call_let_the_tool_go_on() {
    let (runtime, started, finished) = runtime();
    let answer = json!({ "action": "decline" });
    let outcome = runtime
        .execute(Request::new("greet", json!({})).asker(host(&[("name", answer)])))
        .await;
    assert_eq!(outcome.result.unwrap(), "Hello, null!");
    assert_eq!(
        (
            started.load(Ordering::SeqCst),
            finished.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
    // The sample and roots questions reach the host under their keys too.
    let asks = Asks::new()
        .with("m", Ask::sample("hi", 5))
        .with("r", Ask::Roots);
    let kinds: Vec<_> = asks.iter().map(|(key, ask)| (key, ask.kind())).collect();
    assert_eq!(kinds, [("m", AskKind::Sample), ("r", AskKind::Roots)]);
}
