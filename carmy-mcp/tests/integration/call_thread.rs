//! The call thread (`McpServer::call_thread`): calls and resource reads run on a second thread
//! of the session's own with every promise of the line transport kept across the two threads. Ids stay exact, a
//! duplicate is refused whichever thread has the first, a cancel stops the call where it runs
//! and frees its id, every call is answered when the input ends, a line that is not a call
//! after all is answered as on one thread, and a lone call stays on the serve loop. In process,
//! on a duplex stream, line by line; the tools say which thread ran them.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, Carmy, Effect, Invocation, NoInput, Resource, ResourceSpec, Tool, ToolSpec,
};
use carmy_mcp::{CallThread, McpServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Bounds every wait, so a broken server fails a test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);
/// The name the call thread has.
const CALL_THREAD: &str = "carmy-calls";

#[derive(Deserialize, JsonSchema)]
struct NapInput {
    /// Milliseconds to sleep before answering.
    ms: u64,
    /// Makes the line as long as a test needs.
    #[serde(default, rename = "pad")]
    _pad: String,
}

#[derive(Serialize, JsonSchema)]
struct Where {
    /// The name of the thread the call ran on.
    thread: String,
}

/// Sleeps, then says which thread it ran on; counts the naps stopped before their end.
struct Nap {
    stopped: Arc<AtomicUsize>,
}

/// Counts a nap as stopped unless it is defused at its end.
struct Stopped(Option<Arc<AtomicUsize>>);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(stopped) = self.0.take() {
            stopped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Tool for Nap {
    type Input = NapInput;
    type Output = Where;
    const SPEC: ToolSpec = ToolSpec::new("nap", Effect::None).description("Sleeps a while.");
    async fn run(&self, input: NapInput, _: Invocation) -> Result<Where, AgentError> {
        let mut stopped = Stopped(Some(Arc::clone(&self.stopped)));
        tokio::time::sleep(Duration::from_millis(input.ms)).await;
        stopped.0 = None;
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        Ok(Where { thread })
    }
}

/// Says which thread read it.
struct Here;

impl Resource for Here {
    type Input = NoInput;
    type Output = String;
    const SPEC: ResourceSpec = ResourceSpec::new("here", "test://here");
    async fn read(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok(std::thread::current().name().unwrap_or("").to_owned())
    }
}

/// A session served by `serve_io` with `call_thread`, seen one line at a time.
struct Session {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    served: tokio::task::JoinHandle<()>,
    /// Naps stopped before their end.
    stopped: Arc<AtomicUsize>,
}

impl Session {
    async fn start(call_thread: CallThread) -> Self {
        let stopped = Arc::new(AtomicUsize::new(0));
        let runtime = Carmy::new()
            .tool(Nap {
                stopped: Arc::clone(&stopped),
            })
            .resource(Here)
            .build()
            .expect("catalog");
        let server = McpServer::new(runtime).call_thread(call_thread);
        let (client, server_io) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_io);
        let served = tokio::spawn(async move {
            server
                .serve_io(server_read, server_write)
                .await
                .expect("served");
        });
        let (read, write) = tokio::io::split(client);
        let mut session = Self {
            write,
            read: BufReader::new(read).lines(),
            served,
            stopped,
        };
        session
            .send(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": { "protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": { "name": "raw", "version": "0" } } }))
            .await;
        assert_eq!(session.receive().await["id"], 0);
        session
            .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        session
    }

    async fn write_line(&mut self, line: &str) {
        let line = format!("{line}\n");
        self.write.write_all(line.as_bytes()).await.expect("write");
    }

    async fn send(&mut self, message: &Value) {
        self.write_line(&message.to_string()).await;
    }

    /// The next line, as written.
    async fn receive_line(&mut self) -> String {
        tokio::time::timeout(PATIENCE, self.read.next_line())
            .await
            .expect("answered in time")
            .expect("read")
            .expect("open")
    }

    async fn receive(&mut self) -> Value {
        let line = self.receive_line().await;
        serde_json::from_str(&line).expect("JSON")
    }

    /// Ends the input and waits for the server to finish.
    async fn finish(mut self) -> Vec<Value> {
        self.write.shutdown().await.expect("end of input");
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(PATIENCE, self.read.next_line())
            .await
            .expect("closed in time")
            .expect("read")
        {
            rest.push(serde_json::from_str(&line).expect("JSON"));
        }
        tokio::time::timeout(PATIENCE, self.served)
            .await
            .expect("the server ends with its input")
            .expect("the server did not panic");
        rest
    }
}

fn nap(id: &str, ms: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"nap","arguments":{{"ms":{ms}}}}}}}"#
    )
}

fn read_here(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"test://here"}}}}"#
    )
}

/// The thread that read `test://here`, from the read's answer.
fn reader(answer: &Value) -> &str {
    answer["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a thread in {answer}"))
}

fn thread(answer: &Value) -> &str {
    answer["result"]["structuredContent"]["thread"]
        .as_str()
        .unwrap_or_else(|| panic!("a thread in {answer}"))
}

fn ping(id: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "ping" })
}

#[tokio::test]
async fn calls_run_on_the_call_thread_and_keep_their_ids_as_written() {
    let mut session = Session::start(CallThread::Always).await;
    // Three ids that are three JSON values, all in flight at once.
    for id in ["7.0", "7", r#""7""#] {
        session.write_line(&nap(id, 100)).await;
    }
    let mut ids = Vec::new();
    for _ in 0..3 {
        let line = session.receive_line().await;
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(thread(&answer), CALL_THREAD, "{line}");
        let id = line
            .split(r#""id":"#)
            .nth(1)
            .and_then(|rest| rest.split([',', '}']).next())
            .expect("an id")
            .to_owned();
        ids.push(id);
    }
    ids.sort();
    assert_eq!(ids, [r#""7""#, "7", "7.0"]);
    assert!(session.finish().await.is_empty());
}

#[tokio::test]
async fn resource_reads_run_on_the_call_thread_behind_a_call() {
    let mut session = Session::start(CallThread::WhenBusy).await;
    // Alone, a read stays on the loop.
    session.write_line(&read_here("1")).await;
    let answer = session.receive().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_ne!(reader(&answer), CALL_THREAD, "{answer}");
    // Behind a call the loop runs, it goes across, and is answered first.
    session.write_line(&nap("2", 300)).await;
    session.write_line(&read_here("3.0")).await;
    let line = session.receive_line().await;
    assert!(line.contains(r#""id":3.0"#), "{line}");
    assert_eq!(
        reader(&serde_json::from_str(&line).expect("JSON")),
        CALL_THREAD
    );
    let answer = session.receive().await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert_ne!(thread(&answer), CALL_THREAD, "{answer}");
    assert!(session.finish().await.is_empty());
}

#[tokio::test]
async fn a_duplicate_of_a_call_on_the_call_thread_is_refused() {
    let mut session = Session::start(CallThread::Always).await;
    session.write_line(&nap("1", 300)).await;
    // Another call and a request of the loop's with the same id, while the first runs.
    session.write_line(&nap("1", 1)).await;
    session.send(&ping("x")).await;
    session
        .send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))
        .await;
    let mut refused = 0;
    let mut answered = Vec::new();
    for _ in 0..4 {
        let answer = session.receive().await;
        if answer["error"]["code"] == -32600 {
            assert_eq!(answer["id"], 1, "{answer}");
            refused += 1;
        } else {
            answered.push(answer);
        }
    }
    assert_eq!(refused, 2, "{answered:?}");
    assert_eq!(answered[0]["id"], "x");
    assert_eq!(answered[1]["id"], 1);
    assert_eq!(thread(&answered[1]), CALL_THREAD);
    assert!(session.finish().await.is_empty());
}

#[tokio::test]
async fn a_cancel_stops_a_call_on_the_call_thread_and_frees_its_id() {
    let mut session = Session::start(CallThread::Always).await;
    session.write_line(&nap("5", 60_000)).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    session
        .send(
            &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": { "requestId": 5 } }),
        )
        .await;
    // Reused at once: the new call is the one answered.
    session.write_line(&nap("5", 1)).await;
    let answer = session.receive().await;
    assert_eq!(answer["id"], 5, "{answer}");
    assert_eq!(thread(&answer), CALL_THREAD);
    // The first was stopped, and nothing else comes.
    session.send(&ping("end")).await;
    assert_eq!(session.receive().await["id"], "end");
    assert_eq!(session.stopped.load(Ordering::SeqCst), 1);
    assert!(session.finish().await.is_empty());
}

#[tokio::test]
async fn every_call_is_answered_when_the_input_ends() {
    let mut session = Session::start(CallThread::WhenBusy).await;
    for id in 1..=40 {
        session.write_line(&nap(&id.to_string(), 50)).await;
    }
    let answers = session.finish().await;
    let mut ids: Vec<u64> = answers
        .iter()
        .map(|answer| answer["id"].as_u64().expect("an id"))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=40).collect::<Vec<_>>());
    // Both threads served some.
    let on_call_thread = answers
        .iter()
        .filter(|answer| thread(answer) == CALL_THREAD)
        .count();
    assert!(
        on_call_thread > 0 && on_call_thread < 40,
        "{on_call_thread} of 40 on the call thread"
    );
}

#[tokio::test]
async fn a_lone_call_stays_on_the_serve_loop() {
    let mut session = Session::start(CallThread::WhenBusy).await;
    for id in 1..=5 {
        session.write_line(&nap(&id.to_string(), 1)).await;
        let answer = session.receive().await;
        assert_eq!(answer["id"], id);
        assert_ne!(thread(&answer), CALL_THREAD, "{answer}");
    }
    assert!(session.finish().await.is_empty());
}

#[tokio::test]
async fn a_long_call_stays_on_the_serve_loop() {
    let mut session = Session::start(CallThread::Always).await;
    let pad = "x".repeat(100_000);
    session
        .send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "nap", "arguments": { "ms": 1, "pad": pad } } }))
        .await;
    let answer = session.receive().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_ne!(thread(&answer), CALL_THREAD, "{answer}");
    // A short one goes across.
    session.write_line(&nap("2", 1)).await;
    assert_eq!(thread(&session.receive().await), CALL_THREAD);
    assert!(session.finish().await.is_empty());
}

#[tokio::test]
async fn a_line_that_is_not_a_call_after_all_is_answered_as_on_one_thread() {
    // Its envelope is a call's; its params are not (`name` is a number).
    let line = r#"{"jsonrpc":"2.0","id":9.0,"method":"tools/call","params":{"name":7}}"#;
    let mut answers = Vec::new();
    for call_thread in [CallThread::Off, CallThread::Always] {
        let mut session = Session::start(call_thread).await;
        session.write_line(line).await;
        answers.push(session.receive_line().await);
        // Its id is free again.
        session.write_line(&nap("9.0", 1)).await;
        let answer = session.receive_line().await;
        assert!(answer.contains(r#""id":9.0"#), "{answer}");
        assert!(session.finish().await.is_empty());
    }
    assert!(answers[0].contains(r#""error""#), "{}", answers[0]);
    assert_eq!(answers[0], answers[1]);
}
