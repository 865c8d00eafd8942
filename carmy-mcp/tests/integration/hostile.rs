//! Hostile clients: garbage over the real stdio of the testbed binary, a client that never reads,
//! a thousand retries of one request id, tools that panic, hang, lie about their output or get
//! cancelled, and attempts to get around confirmation. Each case ends with the server still
//! serving.

use crate::common;

use std::{
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use carmy_core::{
    AgentError, Carmy, Confirmation, Context, Effect, Invocation, NoInput, Runtime, Tool, ToolSpec,
};
use carmy_mcp::{META_ERROR, META_EXECUTION_ID, META_REQUEST_ID, META_STATUS, McpServer};
use common::{
    LIFECYCLES, Lifecycle, PATIENCE, call, call_request, call_with, connect, meta, testbed_command,
    with_meta,
};
use rmcp::{model::CallToolResult, service::PeerRequestOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, ChildStdin, ChildStdout},
};

/// The testbed binary at the byte level, with its pid for `/proc`.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: tokio::io::Lines<BufReader<ChildStdout>>,
}

impl Raw {
    fn spawn() -> Self {
        let mut child = testbed_command(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the testbed starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    async fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).await.expect("write to the testbed");
        stdin.flush().await.expect("flush");
    }

    async fn send(&mut self, message: &Value) {
        self.write(format!("{message}\n").as_bytes()).await;
    }

    async fn receive(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("the testbed answered in time")
            .expect("read from the testbed")
            .expect("the testbed's stdout is open");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("non-JSON: {error}: {line}"))
    }

    /// Sends `message` and expects one JSON-RPC error: returns (id, code).
    async fn refused(&mut self, bytes: &[u8]) -> (Value, i64) {
        self.write(bytes).await;
        let answer = self.receive().await;
        let code = answer["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {answer}"));
        assert!(answer.as_object().unwrap().contains_key("id"), "{answer}");
        (answer["id"].clone(), code)
    }

    async fn initialize(&mut self) {
        self.send(&json!({
            "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": { "name": "hostile", "version": "0" } }
        }))
        .await;
        let answer = self.receive().await;
        assert_eq!(answer["id"], "init", "{answer}");
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
    }

    async fn assert_serving(&mut self, id: u64) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": { "name": "lookup", "arguments": { "sku": "MOUSE-1" } } }))
            .await;
        let answer = self.receive().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(
            answer["result"]["structuredContent"]["stock"], 12,
            "{answer}"
        );
    }

    fn rss_kib(&self) -> u64 {
        let pid = self.child.id().expect("running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    async fn finish(mut self) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("the testbed exits once stdin closes")
            .expect("wait");
        assert!(status.success(), "{status}");
    }
}

#[tokio::test]
async fn raw_stdio_answers_garbage_in_every_form_and_keeps_serving() {
    let mut raw = Raw::spawn();
    // Before any session: a request that is not `initialize` is refused, a notification and a
    // stray response are ignored, and the session can still start.
    let (id, _) = raw
        .refused(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n")
        .await;
    assert_eq!(id, json!(1));
    raw.write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await;
    raw.write(b"{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n")
        .await;
    raw.write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n")
        .await;
    raw.initialize().await;
    raw.assert_serving(2).await;

    let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let cases: Vec<(Vec<u8>, Value, i64)> = vec![
        // Not JSON, invalid UTF-8, truncated, a lone BOM.
        (b"hello\n".to_vec(), Value::Null, -32700),
        (b"\xff\xfe\xfd{\"id\":1}\n".to_vec(), Value::Null, -32700),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/ca\n".to_vec(),
            Value::Null,
            -32700,
        ),
        (b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}\n".to_vec(), Value::Null, -32700),
        // Nested far past any parser's comfort: an answer, not a stack overflow.
        (format!("{}\n", deep(100_000)).into_bytes(), Value::Null, -32600),
        (
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{{\"name\":\"shout\",\"arguments\":{{\"x\":{}}}}}}}\n",
                deep(100_000)
            )
            .into_bytes(),
            json!(4),
            -32600,
        ),
        // Wrong JSON-RPC shapes.
        (b"null\n".to_vec(), Value::Null, -32600),
        (b"\"ping\"\n".to_vec(), Value::Null, -32600),
        (b"[]\n".to_vec(), Value::Null, -32600),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}\n".to_vec(),
            Value::Null,
            -32600,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":42}\n".to_vec(),
            json!(5),
            -32600,
        ),
        (b"{\"id\":6,\"method\":\"ping\"}\n".to_vec(), json!(6), -32600),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":\"x\"}\n".to_vec(),
            json!(7),
            -32602,
        ),
        // Unknown methods.
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/explode\"}\n".to_vec(),
            json!(8),
            -32601,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"\"}\n".to_vec(),
            json!(9),
            -32601,
        ),
    ];
    for (index, (line, id, code)) in cases.into_iter().enumerate() {
        let answer = raw.refused(&line).await;
        assert_eq!(
            answer,
            (id, code),
            "case {index}: {}",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        );
        raw.assert_serving(100 + index as u64).await;
    }

    // Ignored, as JSON-RPC says: notifications (known, unknown, malformed) and stray responses.
    for line in [
        &b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}\n"[..],
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":7}\n",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":12345}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":4242,\"result\":{}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":4243,\"error\":{\"code\":1,\"message\":\"x\"}}\n",
        b"\n\r\n   \n",
    ] {
        raw.write(line).await;
    }
    raw.assert_serving(200).await;

    // Arguments nested deeper than the runtime's bound (64) but within the parser's: a tool
    // error naming the limit, not a crash.
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":201,\"method\":\"tools/call\",\"params\":{{\"name\":\"word_count\",\"arguments\":{{\"text\":{}}}}}}}\n",
        deep(100)
    );
    raw.write(line.as_bytes()).await;
    let answer = raw.receive().await;
    assert_eq!(answer["id"], 201, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["_meta"][META_ERROR]["code"], "INVALID_ARGUMENTS",
        "{answer}"
    );

    // A duplicate id while the first is in flight is refused; the first is still answered once.
    let slow = json!({ "jsonrpc": "2.0", "id": 300, "method": "tools/call",
                       "params": { "name": "slow", "arguments": { "steps": 3, "step_ms": 100 } } });
    raw.send(&slow).await;
    raw.send(&slow).await;
    let duplicate = raw.receive().await;
    assert_eq!(duplicate["id"], 300, "{duplicate}");
    assert_eq!(duplicate["error"]["code"], -32600, "{duplicate}");
    let first = raw.receive().await;
    assert_eq!(first["id"], 300, "{first}");
    assert_eq!(first["result"]["structuredContent"]["steps"], 3, "{first}");
    // Once answered, the id may be used again (JSON-RPC only forbids it while in flight).
    raw.send(&json!({ "jsonrpc": "2.0", "id": 300, "method": "ping" }))
        .await;
    assert_eq!(raw.receive().await["result"], json!({}));

    // A last line without its newline still counts.
    raw.write(b"{\"jsonrpc\":\"2.0\",\"id\":400,\"method\":\"ping\"}")
        .await;
    drop(raw.stdin.take());
    assert_eq!(raw.receive().await["id"], 400);
    raw.finish().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_gets_back_pressure_not_server_memory_growth() {
    // Each `tools/list` answer is a few KiB for ~60 bytes of request: unbounded, 20,000 of them
    // would queue ~100 MiB of answers in the server.
    const REQUESTS: usize = 20_000;
    let mut raw = Raw::spawn();
    raw.initialize().await;
    raw.assert_serving(1).await;
    let baseline = raw.rss_kib();

    let mut stdin = raw.stdin.take().expect("stdin");
    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let written = Arc::clone(&written);
        tokio::spawn(async move {
            for id in 0..REQUESTS {
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/list\"}}\n",
                    10_000 + id
                );
                stdin.write_all(line.as_bytes()).await.expect("write");
                written.fetch_add(1, Ordering::SeqCst);
            }
            stdin.flush().await.expect("flush");
            stdin
        })
    };

    // Wait until the writer is blocked: the server stopped reading.
    let mut last = usize::MAX;
    let mut stalled_since = Instant::now();
    let deadline = Instant::now() + PATIENCE;
    let mut peak = baseline;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(raw.rss_kib());
        let now = written.load(Ordering::SeqCst);
        if now != last {
            last = now;
            stalled_since = Instant::now();
        } else if stalled_since.elapsed() > Duration::from_millis(1500) {
            break;
        }
        assert!(Instant::now() < deadline, "the writer never stalled");
    }
    let blocked_at = written.load(Ordering::SeqCst);
    assert!(
        blocked_at < REQUESTS,
        "the server kept reading: all {REQUESTS} requests were taken without any answer read"
    );
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(raw.rss_kib());
    }
    eprintln!(
        "slow reader: baseline {baseline} KiB, peak {peak} KiB, writer blocked after {blocked_at} of {REQUESTS} requests"
    );
    // The outbox is bounded at 8 MiB; allow for the answers being built and the allocator.
    // Unbounded, this run grows by ~200 MiB.
    assert!(
        peak < baseline + 80 * 1024,
        "server RSS grew from {baseline} KiB to {peak} KiB while the client did not read"
    );

    // The client reads again: every request gets its answer, in full.
    let mut answered = 0;
    while answered < REQUESTS {
        let answer = raw.receive().await;
        assert!(
            answer["result"]["tools"]
                .as_array()
                .is_some_and(|t| t.len() == 7),
            "{answer}"
        );
        answered += 1;
    }
    raw.stdin = Some(writer.await.expect("writer"));
    raw.assert_serving(2).await;
    raw.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_retries_of_one_request_id_over_mcp_run_once() {
    for lifecycle in LIFECYCLES {
        let session = common::in_process(lifecycle, Context::new().with_principal("agent")).await;
        let client = Arc::new(session.client);
        let order = json!({ "sku": "MOUSE-1", "quantity": 2 });
        let calls = (0..1000).map(|_| {
            let client = Arc::clone(&client);
            let order = order.clone();
            tokio::spawn(async move {
                call_with(
                    &client,
                    "place_order",
                    order,
                    with_meta(json!({ META_REQUEST_ID: "one-order" })),
                )
                .await
                .expect("answered")
            })
        });
        let mut results = Vec::new();
        for call in calls.collect::<Vec<_>>() {
            results.push(call.await.expect("join"));
        }
        assert_eq!(
            session.order_runs.load(Ordering::SeqCst),
            1,
            "{lifecycle:?}"
        );
        let first = &results[0];
        let succeeded = results
            .iter()
            .filter(|result| meta(result, META_STATUS) == "succeeded")
            .count();
        assert_eq!(succeeded, 1, "{lifecycle:?}");
        for result in &results {
            assert_eq!(result.structured_content, first.structured_content);
            assert_eq!(
                meta(result, META_EXECUTION_ID),
                meta(first, META_EXECUTION_ID)
            );
        }
        // The same id with other arguments is a conflict, and runs nothing.
        let conflict = call_with(
            &client,
            "place_order",
            json!({ "sku": "MOUSE-1", "quantity": 3 }),
            with_meta(json!({ META_REQUEST_ID: "one-order" })),
        )
        .await
        .expect("answered");
        assert_eq!(error_code(&conflict), "IDEMPOTENCY_CONFLICT");
        assert_eq!(session.order_runs.load(Ordering::SeqCst), 1);
    }
}

fn error_code(result: &CallToolResult) -> &str {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    meta(result, META_ERROR)["code"].as_str().expect("code")
}

// Tools that misbehave, each counted.

#[derive(Default)]
struct Counters {
    writes_started: AtomicU64,
    writes_dropped: AtomicU64,
    deletes: AtomicU64,
}

struct Panics;
impl Tool for Panics {
    type Input = NoInput;
    type Output = ();
    const SPEC: ToolSpec = ToolSpec::new("panics", Effect::None);
    async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
        panic!("a bug in the tool")
    }
}

struct Hangs;
impl Tool for Hangs {
    type Input = NoInput;
    type Output = ();
    const SPEC: ToolSpec = ToolSpec::new("hangs", Effect::Read).timeout(Duration::from_millis(200));
    async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
        std::future::pending().await
    }
}

#[derive(Serialize, JsonSchema)]
struct Small {
    #[schemars(range(max = 10))]
    n: u32,
}

struct Lies;
impl Tool for Lies {
    type Input = NoInput;
    type Output = Small;
    const SPEC: ToolSpec = ToolSpec::new("lies", Effect::None);
    async fn run(&self, _: NoInput, _: Invocation) -> Result<Small, AgentError> {
        Ok(Small { n: 11 })
    }
}

/// A slow, non-idempotent write; counts how often it started and how often it was dropped.
struct SlowWrite(Arc<Counters>);

struct DropCount(Arc<Counters>, bool);
impl Drop for DropCount {
    fn drop(&mut self) {
        if !self.1 {
            self.0.writes_dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct Amount {
    amount: u32,
}

impl Tool for SlowWrite {
    type Input = Amount;
    type Output = u32;
    const SPEC: ToolSpec = ToolSpec::new("transfer", Effect::Write);
    async fn run(&self, input: Amount, _: Invocation) -> Result<u32, AgentError> {
        self.0.writes_started.fetch_add(1, Ordering::SeqCst);
        let mut guard = DropCount(Arc::clone(&self.0), false);
        tokio::time::sleep(Duration::from_secs(30)).await;
        guard.1 = true;
        Ok(input.amount)
    }
}

#[derive(Deserialize, JsonSchema)]
struct Target {
    id: String,
}

struct Delete(Arc<Counters>);
impl Tool for Delete {
    type Input = Target;
    type Output = String;
    const SPEC: ToolSpec =
        ToolSpec::new("delete_account", Effect::Destructive).confirmation(Confirmation::Required);
    async fn run(&self, input: Target, _: Invocation) -> Result<String, AgentError> {
        self.0.deletes.fetch_add(1, Ordering::SeqCst);
        Ok(input.id)
    }
}

fn hostile_runtime() -> (Runtime, Arc<Counters>) {
    let counters = Arc::new(Counters::default());
    let runtime = Carmy::new()
        .tool(Panics)
        .tool(Hangs)
        .tool(Lies)
        .tool(SlowWrite(Arc::clone(&counters)))
        .tool(Delete(Arc::clone(&counters)))
        .build()
        .expect("the catalog builds");
    (runtime, counters)
}

async fn serve(lifecycle: Lifecycle, runtime: &Runtime, context: Context) -> common::Session {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    let server = McpServer::new(runtime.clone()).context(context);
    tokio::spawn(server.serve_io(read, write));
    connect(lifecycle, client_io).await.0
}

async fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn faulty_tools_are_recorded_and_the_server_stays_up() {
    for lifecycle in LIFECYCLES {
        let (runtime, counters) = hostile_runtime();
        let session = serve(lifecycle, &runtime, Context::new().with_principal("p")).await;
        for (tool, status, code) in [
            ("panics", "panicked", "TOOL_PANIC"),
            ("hangs", "timed_out", "TIMEOUT"),
            ("lies", "failed", "INVALID_OUTPUT"),
        ] {
            let result = call(&session, tool, json!({})).await;
            assert_eq!(meta(&result, META_STATUS), status, "{tool}");
            assert_eq!(error_code(&result), code, "{tool}");
            let id = meta(&result, META_EXECUTION_ID).as_str().unwrap().into();
            let record = runtime.execution(&id).expect("recorded");
            assert_eq!(record.status.as_str(), status, "{tool}");
        }

        // Cancelled mid-way with a request id: the tool's future is dropped, and a retry of that
        // non-idempotent write is `EXECUTION_UNCERTAIN`, never a second run.
        let handle = session
            .peer()
            .send_request_with_option(
                call_request("transfer", json!({ "amount": 5 })),
                with_meta(json!({ META_REQUEST_ID: "t-1" })),
            )
            .await
            .expect("sent");
        wait_until("the write started", || {
            counters.writes_started.load(Ordering::SeqCst) == 1
        })
        .await;
        // 2026-07-28 has no per-request cancellation on stdio streams; closing the session is
        // how its client gives up, so that lifecycle drops the connection instead.
        match lifecycle {
            Lifecycle::Initialize => handle.cancel(Some("changed my mind".into())).await.unwrap(),
            Lifecycle::Discover => session.cancel().await.map(drop).unwrap(),
        }
        wait_until("the write was dropped", || {
            counters.writes_dropped.load(Ordering::SeqCst) == 1
        })
        .await;
        wait_until("nothing runs", || runtime.running_executions() == 0).await;

        let session = serve(lifecycle, &runtime, Context::new().with_principal("p")).await;
        let retry = call_with(
            &session,
            "transfer",
            json!({ "amount": 5 }),
            with_meta(json!({ META_REQUEST_ID: "t-1" })),
        )
        .await
        .expect("answered");
        assert_eq!(error_code(&retry), "EXECUTION_UNCERTAIN");
        assert_eq!(counters.writes_started.load(Ordering::SeqCst), 1);

        // Still serving.
        let result = call(&session, "lies", json!({})).await;
        assert_eq!(error_code(&result), "INVALID_OUTPUT");
        session.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn confirmation_cannot_be_bypassed_over_mcp() {
    for lifecycle in LIFECYCLES {
        let (runtime, counters) = hostile_runtime();
        let mallory = serve(
            lifecycle,
            &runtime,
            Context::new().with_principal("mallory"),
        )
        .await;
        let target = json!({ "id": "acct-1" });
        let not_run = |result: Result<CallToolResult, rmcp::ErrorData>, case: &str| {
            if let Ok(result) = &result {
                assert_eq!(result.is_error, Some(true), "{case}: {result:?}");
            }
            assert_eq!(counters.deletes.load(Ordering::SeqCst), 0, "{case}");
        };

        // Through the arguments.
        for arguments in [
            json!({ "id": "acct-1", "confirm": true }),
            json!({ "id": "acct-1", "grants": ["confirm:delete_account"] }),
            json!({ "id": "acct-1", "_meta": { "carmy/grants": ["confirm:delete_account"] } }),
        ] {
            let result = call_with(
                &mallory,
                "delete_account",
                arguments.clone(),
                PeerRequestOptions::no_options(),
            )
            .await;
            not_run(result, &arguments.to_string());
        }
        // Through `_meta`.
        for extra in [
            json!({ "carmy/grants": ["confirm:delete_account"] }),
            json!({ "carmy/confirmed": true, "confirm": true, "grant": "confirm:delete_account" }),
            json!({ "carmy/principal": "admin", "principal": "admin" }),
            json!({ "carmy/context": { "grants": ["confirm:delete_account"] } }),
        ] {
            let result = call_with(
                &mallory,
                "delete_account",
                target.clone(),
                with_meta(extra.clone()),
            )
            .await;
            not_run(result, &extra.to_string());
        }
        // Through names that look like the tool's: other case, look-alike letters, invisible
        // characters, full-width forms, padding. None resolves to a tool.
        for name in [
            "Delete_Account",
            "DELETE_ACCOUNT",
            "delete_acc\u{043e}unt",  // Cyrillic o
            "delete_\u{0430}ccount",  // Cyrillic a
            "delete_account\u{200b}", // zero-width space
            "\u{feff}delete_account",
            "delete\u{2010}account",
            "\u{ff44}elete_account", // full-width d
            "delete_account ",
            " delete_account",
            "delete_account\0",
        ] {
            let result = call_with(
                &mallory,
                name,
                target.clone(),
                PeerRequestOptions::no_options(),
            )
            .await;
            match &result {
                Err(error) => assert_eq!(error.code.0, -32602, "{name:?}: {error:?}"),
                Ok(result) => panic!("{name:?} resolved to a tool: {result:?}"),
            }
            not_run(result, name);
        }

        // A request id recorded under a principal allowed to confirm is not a way in for another.
        let admin = serve(
            lifecycle,
            &runtime,
            Context::new()
                .with_principal("admin")
                .with_grants(["confirm:delete_account"]),
        )
        .await;
        let key = || with_meta(json!({ META_REQUEST_ID: "del-1" }));
        let done = call_with(&admin, "delete_account", target.clone(), key())
            .await
            .expect("answered");
        assert_eq!(meta(&done, META_STATUS), "succeeded");
        assert_eq!(counters.deletes.load(Ordering::SeqCst), 1);
        let replayed = call_with(&mallory, "delete_account", target.clone(), key())
            .await
            .expect("answered");
        assert_eq!(replayed.is_error, Some(true), "{replayed:?}");
        assert_ne!(meta(&replayed, META_STATUS), "replayed");
        assert_eq!(counters.deletes.load(Ordering::SeqCst), 1);
        // The admin's own retry is a replay.
        let again = call_with(&admin, "delete_account", target.clone(), key())
            .await
            .expect("answered");
        assert_eq!(meta(&again, META_STATUS), "replayed");
        assert_eq!(counters.deletes.load(Ordering::SeqCst), 1);
    }
}
