//! Streamable HTTP: authentication, Host and Origin checks, body limit, deadline, disconnect,
//! health and graceful shutdown, driven with raw HTTP/1.1 so every byte is the test's.

use crate::common;

use std::{
    net::SocketAddr,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use carmy_core::{
    AgentError, Carmy, Context, Effect, ExecutionStatus, Invocation, Runtime, Tool, ToolSpec,
};
use carmy_mcp::{BearerTokens, HttpServer, McpServer};
use common::{PATIENCE, next_probe, tools::ProbeEvent};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::{mpsc, oneshot},
    task::JoinHandle,
};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";

struct Served {
    addr: SocketAddr,
    runtime: Runtime,
    order_runs: Arc<std::sync::atomic::AtomicU64>,
    probe: mpsc::UnboundedReceiver<ProbeEvent>,
    stop: Option<oneshot::Sender<()>>,
    server: JoinHandle<Result<(), carmy_mcp::HttpError>>,
}

/// The testbed on 127.0.0.1, alice and bob holding tokens; `configure` adjusts the server.
async fn serve(configure: impl FnOnce(HttpServer) -> HttpServer) -> Served {
    serve_with(|carmy| carmy, configure).await
}

/// [`serve`], with what `more` adds to the testbed's catalog.
async fn serve_with(
    more: impl FnOnce(Carmy) -> Carmy,
    configure: impl FnOnce(HttpServer) -> HttpServer,
) -> Served {
    let (probe_tx, probe) = mpsc::unbounded_channel();
    let testbed = common::tools::testbed_with(probe_tx, |carmy| more(carmy.tool(Pad)));
    let tokens = BearerTokens::new()
        .token(ALICE, "alice", ["confirm:delete_order"])
        .token(BOB, "bob", Vec::<String>::new());
    let http = HttpServer::new(
        McpServer::new(testbed.runtime.clone()).context(Context::new().with_grant("host-grant")),
    )
    .authenticator(tokens);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel();
    let server = tokio::spawn(configure(http).serve_with_shutdown(listener, async {
        let _ = stopped.await;
    }));
    Served {
        addr,
        runtime: testbed.runtime,
        order_runs: testbed.order_runs,
        probe,
        stop: Some(stop),
        server,
    }
}

impl Served {
    async fn shutdown(mut self) {
        let _ = self.stop.take().expect("running").send(());
        tokio::time::timeout(PATIENCE, self.server)
            .await
            .expect("the server stopped in time")
            .expect("the server task")
            .expect("the server stopped cleanly");
    }
}

/// One HTTP/1.1 exchange on its own connection.
struct Exchange {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Exchange {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The JSON-RPC messages of the body: plain JSON, or the `data:` lines of an SSE stream.
    fn messages(&self) -> Vec<Value> {
        if self.body.trim_start().starts_with('{') {
            return vec![serde_json::from_str(&self.body).expect("a JSON body")];
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter(|data| !data.trim().is_empty())
            .map(|data| serde_json::from_str(data.trim()).expect("JSON in an SSE event"))
            .collect()
    }

    /// The message answering a request (the one with a `result` or an `error`).
    fn answer(&self) -> Value {
        self.messages()
            .into_iter()
            .find(|message| message.get("result").is_some() || message.get("error").is_some())
            .unwrap_or_else(|| panic!("no answer in {:?}", self.body))
    }
}

fn request_bytes(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        head.push_str(&format!(
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Exchange {
    let stream = TcpStream::connect(addr).await.expect("connect");
    exchange_on(stream, &request_bytes(addr, method, path, headers, body)).await
}

/// Sends `request` on `stream` and reads the answer to the end.
async fn exchange_on(mut stream: TcpStream, request: &[u8]) -> Exchange {
    stream.write_all(request).await.expect("send");
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw))
        .await
        .expect("answered in time")
        .expect("read");
    parse(&raw)
}

fn parse(raw: &[u8]) -> Exchange {
    let text = String::from_utf8_lossy(raw);
    let (head, rest) = text.split_once("\r\n\r\n").expect("a complete head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Exchange {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    body
}

fn call_body(id: u64, tool: &str, arguments: Value, meta: Option<Value>) -> String {
    let mut params = json!({ "name": tool, "arguments": arguments });
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Stateless `tools/call` as `token`: no session needed.
async fn call(
    served: &Served,
    token: &str,
    tool: &str,
    arguments: Value,
    meta: Option<Value>,
) -> Exchange {
    let auth = bearer(token);
    exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        &call_body(1, tool, arguments, meta),
    )
    .await
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct PadInput {
    bytes: usize,
}

/// Answers with as many bytes as asked: an answer larger than the buffers between server and
/// client, without a request as large.
struct Pad;

impl Tool for Pad {
    type Input = PadInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("pad", Effect::None).description("Answers `bytes` bytes.");

    async fn run(&self, input: PadInput, _: Invocation) -> Result<String, AgentError> {
        Ok("x".repeat(input.bytes))
    }
}

fn structured(answer: &Value) -> &Value {
    let result = &answer["result"];
    assert_eq!(result["isError"], json!(false), "{answer}");
    &result["structuredContent"]
}

#[tokio::test]
async fn requests_without_valid_credentials_get_401_and_never_reach_a_tool() {
    let served = serve(|http| http.stateless(true)).await;
    let body = call_body(
        1,
        "place_order",
        json!({ "sku": "MOUSE-1", "quantity": 1 }),
        None,
    );
    for authorization in [
        None,
        Some("Bearer not-a-known-token-at-all".to_owned()),
        Some(format!("Basic {ALICE}")),
        Some(ALICE.to_owned()),
    ] {
        let headers: Vec<(&str, &str)> = authorization
            .as_deref()
            .map(|value| ("Authorization", value))
            .into_iter()
            .collect();
        let answer = exchange(served.addr, "POST", "/mcp", &headers, &body).await;
        assert_eq!(answer.status, 401, "{authorization:?}: {}", answer.body);
        assert!(
            answer
                .header("www-authenticate")
                .is_some_and(|value| value.starts_with("Bearer")),
            "{:?}",
            answer.headers
        );
        let error: Value = serde_json::from_str(&answer.body).expect("a JSON error");
        assert_eq!(error["error"], "unauthorized");
    }
    // Not even a session can start without credentials.
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    });
    let answer = exchange(served.addr, "POST", "/mcp", &[], &initialize.to_string()).await;
    assert_eq!(answer.status, 401);
    assert_eq!(served.order_runs.load(Ordering::SeqCst), 0, "no tool ran");
    assert_eq!(served.runtime.running_executions(), 0);

    let answer = call(
        &served,
        ALICE,
        "place_order",
        json!({ "sku": "MOUSE-1", "quantity": 1 }),
        None,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(served.order_runs.load(Ordering::SeqCst), 1);
    served.shutdown().await;
}

#[tokio::test]
async fn forbidden_host_or_origin_gets_403() {
    let served = serve(|http| http.stateless(true)).await;
    let auth = bearer(ALICE);
    let body = call_body(
        1,
        "place_order",
        json!({ "sku": "MOUSE-1", "quantity": 1 }),
        None,
    );
    let rebinding = exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth), ("Host", "evil.example:8080")],
        &body,
    )
    .await;
    assert_eq!(rebinding.status, 403, "{}", rebinding.body);
    let cross_origin = exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth), ("Origin", "https://evil.example")],
        &body,
    )
    .await;
    assert_eq!(cross_origin.status, 403, "{}", cross_origin.body);
    // A foreign page on a loopback-looking name is foreign all the same.
    let lookalike = exchange(
        served.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Origin", "http://127.0.0.1.evil.example"),
        ],
        &body,
    )
    .await;
    assert_eq!(lookalike.status, 403, "{}", lookalike.body);
    assert_eq!(served.order_runs.load(Ordering::SeqCst), 0);

    // A page served from loopback, on any port, may call a loopback server by default: local
    // browser-based clients do.
    for origin in [
        format!("http://127.0.0.1:{}", served.addr.port()),
        "http://localhost:6274".to_owned(),
        "http://[::1]:3000".to_owned(),
    ] {
        let local = exchange(
            served.addr,
            "POST",
            "/mcp",
            &[
                ("Authorization", &auth),
                ("Host", &format!("127.0.0.1:{}", served.addr.port())),
                ("Origin", &origin),
            ],
            &body,
        )
        .await;
        assert_eq!(local.status, 200, "{origin}: {}", local.body);
    }
    served.shutdown().await;

    // Configured origins replace the loopback ones.
    let served = serve(|http| {
        http.stateless(true)
            .allowed_origins(["https://app.example"])
    })
    .await;
    let allowed = exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth), ("Origin", "https://app.example")],
        &body,
    )
    .await;
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    let loopback = exchange(
        served.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Origin", "http://localhost:6274"),
        ],
        &body,
    )
    .await;
    assert_eq!(loopback.status, 403, "{}", loopback.body);
    served.shutdown().await;
}

#[tokio::test]
async fn an_oversized_body_gets_413() {
    let served = serve(|http| http.stateless(true).max_body_bytes(1024)).await;
    let big = call_body(1, "word_count", json!({ "text": "x".repeat(4096) }), None);
    let answer = call_raw(&served, &big).await;
    assert_eq!(answer.status, 413, "{}", answer.body);
    let small = call_body(1, "word_count", json!({ "text": "two words" }), None);
    assert_eq!(call_raw(&served, &small).await.status, 200);
    served.shutdown().await;
}

async fn call_raw(served: &Served, body: &str) -> Exchange {
    let auth = bearer(ALICE);
    exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        body,
    )
    .await
}

#[tokio::test]
async fn the_principal_and_grants_come_from_the_token_and_scope_idempotency() {
    let served = serve(|http| http.stateless(true)).await;
    let order = json!({ "sku": "MOUSE-1", "quantity": 1 });
    let key = Some(json!({ "carmy/request_id": "same-key" }));
    let first = call(&served, ALICE, "place_order", order.clone(), key.clone())
        .await
        .answer();
    let retry = call(&served, ALICE, "place_order", order.clone(), key.clone())
        .await
        .answer();
    assert_eq!(
        structured(&first),
        structured(&retry),
        "alice's retry is replayed"
    );
    assert_eq!(served.order_runs.load(Ordering::SeqCst), 1);
    // Bob's identical key is his own.
    let bob = call(&served, BOB, "place_order", order, key).await.answer();
    assert_ne!(structured(&bob), structured(&first));
    assert_eq!(served.order_runs.load(Ordering::SeqCst), 2);

    // A destructive tool needs `confirm:delete_order`: alice's token grants it, bob's does not.
    let delete = json!({ "order_id": "order-1" });
    let alice = call(&served, ALICE, "delete_order", delete.clone(), None)
        .await
        .answer();
    assert_eq!(alice["result"]["isError"], json!(false), "{alice}");
    let bob = call(&served, BOB, "delete_order", delete, None)
        .await
        .answer();
    assert_eq!(bob["result"]["isError"], json!(true), "{bob}");
    served.shutdown().await;
}

#[tokio::test]
async fn the_health_endpoint_needs_no_credentials() {
    let served = serve(|http| http).await;
    let answer = exchange(served.addr, "GET", "/health", &[], "").await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, r#"{"status":"ok"}"#);
    served.shutdown().await;
}

/// Sends `tools/call slow` and returns the open connection once the tool has started.
async fn start_slow(
    served: &mut Served,
    headers: &[(&str, &str)],
    id: u64,
) -> (TcpStream, carmy_core::ExecutionId) {
    let mut stream = TcpStream::connect(served.addr).await.expect("connect");
    let body = call_body(id, "slow", json!({ "steps": 10_000, "step_ms": 10 }), None);
    stream
        .write_all(&request_bytes(served.addr, "POST", "/mcp", headers, &body))
        .await
        .expect("send");
    let ProbeEvent::Started(execution) = next_probe(&mut served.probe).await else {
        panic!("expected the slow tool to start");
    };
    (stream, execution)
}

async fn expect_cancelled(served: &mut Served, execution: &carmy_core::ExecutionId) {
    let ProbeEvent::Stopped { id, cancelled } = next_probe(&mut served.probe).await else {
        panic!("expected the slow tool to stop");
    };
    assert_eq!(&id, execution);
    assert!(cancelled, "the tool saw its context cancelled");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let status = served
            .runtime
            .execution(execution)
            .expect("recorded")
            .status;
        if status == ExecutionStatus::Cancelled {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "status stayed {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(served.runtime.running_executions(), 0);
}

#[tokio::test]
async fn a_client_disconnecting_cancels_its_call_without_sessions() {
    let mut served = serve(|http| http.stateless(true)).await;
    let auth = bearer(ALICE);
    let (stream, execution) = start_slow(&mut served, &[("Authorization", &auth)], 7).await;
    drop(stream);
    expect_cancelled(&mut served, &execution).await;
    served.shutdown().await;
}

#[tokio::test]
async fn a_client_disconnecting_cancels_its_call_in_a_session() {
    let mut served = serve(|http| http).await;
    let auth = bearer(ALICE);
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    });
    let started = exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        &initialize.to_string(),
    )
    .await;
    assert_eq!(started.status, 200, "{}", started.body);
    let session = started
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let headers = [
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let answer = exchange(
        served.addr,
        "POST",
        "/mcp",
        &headers,
        &initialized.to_string(),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.body);

    // The call runs in the session; the client then goes away mid-call.
    let (stream, execution) = start_slow(&mut served, &headers, 2).await;
    drop(stream);
    expect_cancelled(&mut served, &execution).await;

    // The session goes on.
    let answer = exchange(
        served.addr,
        "POST",
        "/mcp",
        &headers,
        &call_body(3, "word_count", json!({ "text": "still here" }), None),
    )
    .await;
    assert_eq!(
        answer.answer()["result"]["isError"],
        json!(false),
        "{}",
        answer.body
    );
    served.shutdown().await;
}

#[tokio::test]
async fn the_request_deadline_cancels_the_call() {
    let mut served = serve(|http| {
        http.stateless(true)
            .request_timeout(Duration::from_millis(300))
    })
    .await;
    let auth = bearer(ALICE);
    let (mut stream, execution) = start_slow(&mut served, &[("Authorization", &auth)], 1).await;
    expect_cancelled(&mut served, &execution).await;
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw))
        .await
        .expect("answered")
        .expect("read");
    assert_eq!(parse(&raw).status, 504);
    served.shutdown().await;
}

#[tokio::test]
async fn shutdown_lets_running_calls_finish_within_the_grace_period() {
    let mut served = serve(|http| http.stateless(true)).await;
    let auth = bearer(ALICE);
    let mut stream = TcpStream::connect(served.addr).await.expect("connect");
    let body = call_body(1, "slow", json!({ "steps": 5, "step_ms": 100 }), None);
    stream
        .write_all(&request_bytes(
            served.addr,
            "POST",
            "/mcp",
            &[("Authorization", &auth)],
            &body,
        ))
        .await
        .expect("send");
    let ProbeEvent::Started(_) = next_probe(&mut served.probe).await else {
        panic!("expected the slow tool to start");
    };
    let stopping = tokio::spawn(served.shutdown());
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw))
        .await
        .expect("answered")
        .expect("read");
    let answer = parse(&raw);
    assert_eq!(answer.status, 200);
    assert_eq!(structured(&answer.answer())["steps"], 5, "{}", answer.body);
    stopping.await.expect("stopped");
}

#[tokio::test]
async fn shutdown_cancels_calls_past_the_grace_period() {
    let mut served = serve(|http| {
        http.stateless(true)
            .grace_period(Duration::from_millis(200))
    })
    .await;
    let auth = bearer(ALICE);
    // A session, with its standalone stream open, must not hold shutdown up either.
    let (stream, execution) = start_slow(&mut served, &[("Authorization", &auth)], 1).await;
    let runtime = served.runtime.clone();
    let started = tokio::time::Instant::now();
    served.shutdown().await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        runtime.execution(&execution).expect("recorded").status,
        ExecutionStatus::Cancelled
    );
    drop(stream);
}

#[tokio::test]
async fn a_non_loopback_address_needs_an_authenticator() {
    let testbed = common::tools::testbed(mpsc::unbounded_channel().0);
    let listener = TcpListener::bind("0.0.0.0:0").await.expect("bind");
    let refused = HttpServer::new(McpServer::new(testbed.runtime))
        .serve_with_shutdown(listener, async {})
        .await
        .expect_err("refused");
    assert!(
        matches!(refused, carmy_mcp::HttpError::Unauthenticated { .. }),
        "{refused}"
    );
}

// Sessions: bounded, bound to their principal, closed when idle (issue 14, rows 3 and 8).

fn initialize_body(id: u64) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    })
    .to_string()
}

/// A session `token` opened: its bearer header and id.
struct Session {
    auth: String,
    id: String,
}

impl Session {
    fn headers(&self) -> [(&str, &str); 3] {
        [
            ("Authorization", self.auth.as_str()),
            ("Mcp-Session-Id", self.id.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ]
    }
}

/// `initialize` as `token`, without a session: the exchange.
async fn initialize(served: &Served, token: &str, id: u64) -> Exchange {
    let auth = bearer(token);
    exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        &initialize_body(id),
    )
    .await
}

/// A session opened and initialized as `token`.
async fn open_session(served: &Served, token: &str) -> Session {
    let started = initialize(served, token, 1).await;
    assert_eq!(started.status, 200, "{}", started.body);
    let session = Session {
        auth: bearer(token),
        id: started
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned(),
    };
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let answer = exchange(
        served.addr,
        "POST",
        "/mcp",
        &session.headers(),
        &initialized.to_string(),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    session
}

/// `word_count` on `session` as whoever `headers` say.
async fn count_words(served: &Served, headers: &[(&str, &str)]) -> Exchange {
    exchange(
        served.addr,
        "POST",
        "/mcp",
        headers,
        &call_body(9, "word_count", json!({ "text": "one two" }), None),
    )
    .await
}

/// What an answer shows of itself: its status, its header names (the date aside) and its body.
fn shown(answer: &Exchange) -> (u16, Vec<String>, String) {
    let mut names: Vec<String> = answer
        .headers
        .iter()
        .map(|(name, _)| name.to_ascii_lowercase())
        .filter(|name| name != "date")
        .collect();
    names.sort();
    (answer.status, names, answer.body.clone())
}

/// The answer to a request on a session nobody has: what another principal's session must look
/// like.
async fn unknown_session_answer(served: &Served, token: &str) -> (u16, Vec<String>, String) {
    let auth = bearer(token);
    let headers = [
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", "8c1ee3b4-0d7c-4f8e-9b51-3f3a3c8d9e10"),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    shown(&count_words(served, &headers).await)
}

/// Opens the session's stream (`GET`): the connection, once its head is read.
async fn open_stream(served: &Served, session: &Session) -> (TcpStream, u16) {
    let mut stream = TcpStream::connect(served.addr).await.expect("connect");
    let mut headers = session.headers().to_vec();
    headers.push(("Accept", "text/event-stream"));
    stream
        .write_all(&request_bytes(served.addr, "GET", "/mcp", &headers, ""))
        .await
        .expect("send");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0; 1];
        let read = tokio::time::timeout(PATIENCE, stream.read(&mut byte))
            .await
            .expect("a head in time")
            .expect("read");
        assert_eq!(read, 1, "the stream closed before its head");
        head.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&head)
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status");
    (stream, status)
}

/// Whether the server closes `stream` within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut sink = Vec::new();
    tokio::time::timeout(within, stream.read_to_end(&mut sink))
        .await
        .is_ok()
}

/// The JSON-RPC error of a refusal the HTTP layer gives.
fn json_rpc_error(answer: &Exchange) -> Value {
    let body: Value = serde_json::from_str(&answer.body)
        .unwrap_or_else(|error| panic!("{error}: {:?}", answer.body));
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    body
}

#[tokio::test]
async fn sessions_are_bounded_in_all_and_per_principal_with_a_refusal_a_client_can_read() {
    let served = serve(|http| http.max_sessions(3).max_sessions_per_principal(2)).await;
    let alice = [
        open_session(&served, ALICE).await,
        open_session(&served, ALICE).await,
    ];
    let refused = initialize(&served, ALICE, 41).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(
        refused.header("retry-after").is_some(),
        "{:?}",
        refused.headers
    );
    let error = json_rpc_error(&refused);
    assert_eq!(error["id"], 41, "the refusal answers the initialize");
    assert_eq!(
        error["error"]["data"]["error"]["code"], "CAPACITY",
        "{error}"
    );
    assert_eq!(error["error"]["data"]["error"]["retryable"], true);
    assert_eq!(
        error["error"]["data"]["error"]["details"]["max_sessions_per_principal"],
        2
    );

    // Alice's bound is hers: bob opens one, and then the server's bound is reached.
    let _bob = open_session(&served, BOB).await;
    let refused = initialize(&served, BOB, 42).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    let error = json_rpc_error(&refused);
    assert_eq!(
        error["error"]["data"]["error"]["details"]["max_sessions"],
        3
    );

    // Closing a session gives its place back.
    let closed = exchange(served.addr, "DELETE", "/mcp", &alice[0].headers(), "").await;
    assert_eq!(closed.status, 202, "{}", closed.body);
    open_session(&served, BOB).await;
    // The sessions still open still serve.
    let answer = count_words(&served, &alice[1].headers()).await;
    assert_eq!(
        answer.answer()["result"]["isError"],
        false,
        "{}",
        answer.body
    );
    served.shutdown().await;
}

#[tokio::test]
async fn another_principals_requests_on_a_session_are_answered_as_for_an_unknown_one() {
    let mut served = serve(|http| http).await;
    let alice = open_session(&served, ALICE).await;
    let unknown = unknown_session_answer(&served, BOB).await;
    assert_eq!(unknown.0, 404);

    // Alice's call runs in her session; bob holds her session id.
    let (mut running, execution) = start_slow(&mut served, &alice.headers(), 7).await;
    let bob_auth = bearer(BOB);
    let as_bob = [
        ("Authorization", bob_auth.as_str()),
        ("Mcp-Session-Id", alice.id.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let cancel = json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 7, "reason": "bob says so" }
    });
    let cancelled = exchange(served.addr, "POST", "/mcp", &as_bob, &cancel.to_string()).await;
    assert_eq!(shown(&cancelled), unknown, "bob's cancel");
    let call = count_words(&served, &as_bob).await;
    assert_eq!(shown(&call), unknown, "bob's call");
    let deleted = exchange(served.addr, "DELETE", "/mcp", &as_bob, "").await;
    assert_eq!(shown(&deleted), unknown, "bob's DELETE");
    let mut get = as_bob.to_vec();
    get.push(("Accept", "text/event-stream"));
    let stream = exchange(served.addr, "GET", "/mcp", &get, "").await;
    assert_eq!(shown(&stream), unknown, "bob's GET");
    // And without a token, nothing reaches the session at all.
    let anonymous = exchange(
        served.addr,
        "POST",
        "/mcp",
        &as_bob[1..],
        &cancel.to_string(),
    )
    .await;
    assert_eq!(anonymous.status, 401);

    // Alice's call was not cancelled; her session goes on.
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_millis(300), running.read_to_end(&mut raw)).await;
    assert_eq!(
        served
            .runtime
            .execution(&execution)
            .expect("recorded")
            .status,
        ExecutionStatus::Running
    );
    let own = exchange(
        served.addr,
        "POST",
        "/mcp",
        &alice.headers(),
        &cancel.to_string(),
    )
    .await;
    assert_eq!(own.status, 202, "alice cancels her own call");
    expect_cancelled(&mut served, &execution).await;
    let answer = count_words(&served, &alice.headers()).await;
    assert_eq!(
        answer.answer()["result"]["isError"],
        false,
        "{}",
        answer.body
    );
    served.shutdown().await;
}

#[tokio::test]
async fn an_idle_session_is_closed_but_not_while_a_call_runs_or_its_stream_is_open() {
    let idle = Duration::from_millis(300);
    let mut served = serve(|http| {
        http.session_idle_timeout(idle)
            .max_sessions_per_principal(3)
    })
    .await;
    let quiet = open_session(&served, ALICE).await;
    let busy = open_session(&served, ALICE).await;
    let listening = open_session(&served, ALICE).await;
    let (stream, status) = open_stream(&served, &listening).await;
    assert_eq!(status, 200);
    // A call running three idle timeouts long.
    let mut slow = TcpStream::connect(served.addr).await.expect("connect");
    let body = call_body(1, "slow", json!({ "steps": 9, "step_ms": 100 }), None);
    slow.write_all(&request_bytes(
        served.addr,
        "POST",
        "/mcp",
        &busy.headers(),
        &body,
    ))
    .await
    .expect("send");
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, slow.read_to_end(&mut raw))
        .await
        .expect("answered")
        .expect("read");
    assert_eq!(structured(&parse(&raw).answer())["steps"], 9);
    let _ = next_probe(&mut served.probe).await;

    assert_eq!(
        count_words(&served, &quiet.headers()).await.status,
        404,
        "idle: closed"
    );
    for session in [&busy, &listening] {
        let answer = count_words(&served, &session.headers()).await;
        assert_eq!(
            answer.answer()["result"]["isError"],
            false,
            "{}",
            answer.body
        );
    }
    // Once its stream is closed and nothing else happens, the listening one goes too, and the
    // places of the closed sessions are given back.
    drop(stream);
    tokio::time::sleep(idle * 4).await;
    assert_eq!(count_words(&served, &listening.headers()).await.status, 404);
    open_session(&served, ALICE).await;
    open_session(&served, ALICE).await;
    served.shutdown().await;
}

#[tokio::test]
async fn a_session_has_one_stream_at_a_time_and_it_ends_at_its_deadline() {
    let served = serve(|http| http.stream_timeout(Duration::from_millis(500))).await;
    let session = open_session(&served, ALICE).await;
    let (mut first, status) = open_stream(&served, &session).await;
    assert_eq!(status, 200);
    let mut headers = session.headers().to_vec();
    headers.push(("Accept", "text/event-stream"));
    let second = exchange(served.addr, "GET", "/mcp", &headers, "").await;
    assert_eq!(second.status, 409, "{}", second.body);
    assert_eq!(
        json_rpc_error(&second)["error"]["data"]["error"]["code"],
        "SESSION_STREAM_OPEN"
    );
    assert!(
        closed_within(&mut first, PATIENCE).await,
        "the stream ended"
    );
    // The session is still there, and its stream can be opened again.
    let (_again, status) = open_stream(&served, &session).await;
    assert_eq!(status, 200);
    served.shutdown().await;
}

// Bodies: malformed JSON is a JSON-RPC parse error; a byte order mark is read past.

#[tokio::test]
async fn a_body_that_is_not_json_rpc_gets_400_with_a_json_rpc_error() {
    let served = serve(|http| http.stateless(true)).await;
    for (body, code) in [
        ("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", -32700),
        ("not json at all", -32700),
        ("[1, 2, 3]", -32600),
        ("{\"jsonrpc\": \"2.0\", \"hello\": \"world\"}", -32600),
    ] {
        let answer = call_raw(&served, body).await;
        assert_eq!(answer.status, 400, "{body}: {}", answer.body);
        let error = json_rpc_error(&answer);
        assert_eq!(error["error"]["code"], code, "{body}: {error}");
        assert_eq!(error["id"], Value::Null);
    }
    served.shutdown().await;
}

#[tokio::test]
async fn a_body_starting_with_a_byte_order_mark_is_read_as_without_it() {
    let served = serve(|http| http).await;
    let started = exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &bearer(ALICE))],
        &format!("\u{FEFF}{}", initialize_body(1)),
    )
    .await;
    assert_eq!(started.status, 200, "{}", started.body);
    assert!(started.header("mcp-session-id").is_some());
    served.shutdown().await;

    let served = serve(|http| http.stateless(true)).await;
    let body = format!(
        "\u{FEFF}{}",
        call_body(1, "word_count", json!({ "text": "a b c" }), None)
    );
    let answer = call_raw(&served, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answer = answer.answer();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");
    served.shutdown().await;
}

// Connections: a deadline for request heads and a bound on connections (issue 14, row 4).

/// Opens a connection and sends a request head that never ends.
async fn half_open(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
        .await
        .expect("send");
    stream
}

#[tokio::test]
async fn half_sent_request_heads_neither_keep_health_from_answering_nor_stay_open() {
    let timeout = Duration::from_millis(800);
    let served = serve(|http| http.max_connections(8).header_read_timeout(timeout)).await;
    let mut heads = Vec::new();
    for _ in 0..40 {
        heads.push(half_open(served.addr).await);
    }
    let started = tokio::time::Instant::now();
    let health = tokio::time::timeout(
        Duration::from_secs(2),
        exchange(served.addr, "GET", "/health", &[], ""),
    )
    .await
    .expect("health answered while the heads are open");
    assert_eq!(health.status, 200);
    assert!(started.elapsed() < timeout, "{:?}", started.elapsed());
    // Every half-sent head is closed by the server: for room, or at its deadline.
    for head in &mut heads {
        assert!(closed_within(head, timeout * 4).await, "a head stayed open");
    }
    served.shutdown().await;
}

#[tokio::test]
async fn a_kept_alive_connection_quiet_between_requests_is_not_timed_out() {
    let timeout = Duration::from_millis(300);
    let served = serve(|http| http.header_read_timeout(timeout)).await;
    let mut stream = TcpStream::connect(served.addr).await.expect("connect");
    let request = format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", served.addr);
    for _ in 0..2 {
        stream.write_all(request.as_bytes()).await.expect("send");
        // Room for the head and its `Vary` headers (CORS), in one read.
        let mut answer = vec![0; 4096];
        let read = tokio::time::timeout(PATIENCE, stream.read(&mut answer))
            .await
            .expect("answered")
            .expect("read");
        let answer = String::from_utf8_lossy(&answer[..read]);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with(r#"{"status":"ok"}"#), "{answer}");
        tokio::time::sleep(timeout * 3).await;
    }
    served.shutdown().await;
}

#[tokio::test]
async fn a_busy_connection_is_not_closed_for_room() {
    let mut served = serve(|http| http.stateless(true).max_connections(2)).await;
    let auth = bearer(ALICE);
    let (mut running, _) = start_slow(&mut served, &[("Authorization", &auth)], 1).await;
    let mut heads = Vec::new();
    for _ in 0..5 {
        heads.push(half_open(served.addr).await);
    }
    let health = exchange(served.addr, "GET", "/health", &[], "").await;
    assert_eq!(health.status, 200);
    let mut byte = [0; 1];
    let still_open =
        tokio::time::timeout(Duration::from_millis(200), running.read(&mut byte)).await;
    assert!(
        still_open.is_err() || still_open.is_ok_and(|read| read.is_ok_and(|n| n > 0)),
        "the call's connection was closed"
    );
    drop(running);
    served.shutdown().await;
}

#[tokio::test]
async fn a_request_head_over_64_kib_is_refused() {
    let served = serve(|http| http).await;
    let big = "x".repeat(70 * 1024);
    let mut stream = TcpStream::connect(served.addr).await.expect("connect");
    stream
        .write_all(
            format!(
                "GET /health HTTP/1.1\r\nHost: {}\r\nX-Big: {big}\r\n\r\n",
                served.addr
            )
            .as_bytes(),
        )
        .await
        .expect("send");
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");
    served.shutdown().await;
}

// Connections kept by what their clients do not do (issue 33, rows 3 and 4).

/// A connection that reads little at a time: its receive buffer is small, so an answer larger
/// than the buffers between it and the server stops the server's writes until it reads.
async fn connect_slow_reader(addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .set_recv_buffer_size(4096)
        .expect("a small receive buffer");
    socket.connect(addr).await.expect("connect")
}

/// Reads an answer's head off `stream`: its status.
async fn read_head(stream: &mut TcpStream) -> u16 {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0; 1];
        let read = tokio::time::timeout(PATIENCE, stream.read(&mut byte))
            .await
            .expect("a head in time")
            .expect("read");
        assert_eq!(read, 1, "the connection closed before the head");
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head)
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status")
}

/// Bytes in an answer larger than the buffers of the connection it goes out on.
const LARGE_ANSWER: usize = 8 * 1024 * 1024;

/// Sends `session`'s call of a [`LARGE_ANSWER`] on a connection that then reads nothing past
/// the answer's head.
async fn unread_answer(served: &Served, session: &Session) -> TcpStream {
    let mut stream = connect_slow_reader(served.addr).await;
    let body = call_body(5, "pad", json!({ "bytes": LARGE_ANSWER }), None);
    stream
        .write_all(&request_bytes(
            served.addr,
            "POST",
            "/mcp",
            &session.headers(),
            &body,
        ))
        .await
        .expect("send");
    assert_eq!(read_head(&mut stream).await, 200);
    stream
}

#[tokio::test]
async fn with_every_connection_busy_a_new_one_is_refused_at_once_and_health_still_answers() {
    let mut served = serve(|http| http.stateless(true).max_connections(2)).await;
    let auth = bearer(ALICE);
    let (first, one) = start_slow(&mut served, &[("Authorization", &auth)], 1).await;
    let (second, two) = start_slow(&mut served, &[("Authorization", &auth)], 2).await;

    // Heads that never end, past the bound too, keep nobody out.
    let mut heads = Vec::new();
    for _ in 0..5 {
        heads.push(half_open(served.addr).await);
    }
    let health = exchange(served.addr, "GET", "/health", &[], "").await;
    assert_eq!(health.status, 200, "{}", health.body);
    assert_eq!(health.body, r#"{"status":"ok"}"#);
    let refused = call(&served, ALICE, "word_count", json!({ "text": "a b" }), None).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(
        refused.header("retry-after").is_some(),
        "{:?}",
        refused.headers
    );
    let error = json_rpc_error(&refused);
    assert_eq!(
        error["error"]["data"]["error"]["code"], "CAPACITY",
        "{error}"
    );
    assert_eq!(
        error["error"]["data"]["error"]["retryable"], true,
        "{error}"
    );
    assert_eq!(
        error["error"]["data"]["error"]["details"]["max_connections"], 2,
        "{error}"
    );

    // The busy connections were left alone: their calls ran until their clients left.
    drop((first, second));
    let mut stopped = Vec::new();
    for _ in 0..2 {
        let ProbeEvent::Stopped { id, cancelled } = next_probe(&mut served.probe).await else {
            panic!("expected the slow tool to stop");
        };
        assert!(cancelled);
        stopped.push(id);
    }
    stopped.sort_by_key(ToString::to_string);
    let mut started = vec![one, two];
    started.sort_by_key(ToString::to_string);
    assert_eq!(stopped, started);
    // Once they are closed, calls are served again.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let answer = call(&served, ALICE, "word_count", json!({ "text": "a b" }), None).await;
        if answer.status == 200 {
            break;
        }
        assert_eq!(answer.status, 503, "{}", answer.body);
        assert!(tokio::time::Instant::now() < deadline, "no room came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    served.shutdown().await;
}

#[tokio::test]
async fn an_answer_its_client_stops_reading_is_closed_at_the_write_deadline() {
    let served = serve(|http| {
        http.max_body_bytes(LARGE_ANSWER * 2)
            .max_sessions_per_principal(1)
            .session_idle_timeout(Duration::from_millis(200))
            .write_timeout(Duration::from_millis(300))
    })
    .await;
    let session = open_session(&served, ALICE).await;
    let _unread = unread_answer(&served, &session).await;
    // While its answer is being written the session is busy, and alice has no room for
    // another. Once the connection is closed, the session is idle, closed in turn, and its
    // place given back.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let answer = initialize(&served, ALICE, 2).await;
        if answer.status == 200 {
            break;
        }
        assert_eq!(answer.status, 429, "{}", answer.body);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the unread answer still holds its connection"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    served.shutdown().await;
}

#[tokio::test]
async fn a_connection_only_writing_to_a_client_that_stopped_reading_is_closed_for_room() {
    let served = serve(|http| http.max_body_bytes(LARGE_ANSWER * 2).max_connections(1)).await;
    let session = open_session(&served, ALICE).await;
    let _unread = unread_answer(&served, &session).await;
    // The only connection is writing to a client that does not read: a new one takes its
    // place (refused only until its writes have stopped).
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let answer = count_words(&served, &session.headers()).await;
        if answer.status != 503 {
            assert_eq!(answer.status, 200, "{}", answer.body);
            assert_eq!(answer.answer()["result"]["content"][0]["text"], "2");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the writing connection was never closed for room"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    served.shutdown().await;
}

/// `_meta` every 2026-07-28 request carries.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// `subscriptions/listen` (2026-07-28) as `token`: the connection, and the status once the
/// head is read.
async fn listen(served: &Served, token: &str, id: u64) -> (TcpStream, u16) {
    let auth = bearer(token);
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": { "_meta": modern_meta(), "notifications": { "resourcesListChanged": true } }
    });
    let mut stream = TcpStream::connect(served.addr).await.expect("connect");
    let headers = [
        ("Authorization", auth.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    stream
        .write_all(&request_bytes(
            served.addr,
            "POST",
            "/mcp",
            &headers,
            &body.to_string(),
        ))
        .await
        .expect("send");
    let status = read_head(&mut stream).await;
    (stream, status)
}

/// Listens as `token` until a stream opens, while refusals say its principal is at its bound.
async fn listen_once_room(served: &Served, token: &str) -> TcpStream {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (stream, status) = listen(served, token, 9).await;
        if status == 200 {
            return stream;
        }
        assert_eq!(status, 429);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the place was not given back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn listen_streams_are_bounded_per_principal_as_sessions_are() {
    let served = serve_with(
        |carmy| carmy.reports_resource_changes(),
        |http| http.max_sessions_per_principal(2),
    )
    .await;
    let (first, status) = listen(&served, ALICE, 1).await;
    assert_eq!(status, 200);
    let (_second, status) = listen(&served, ALICE, 2).await;
    assert_eq!(status, 200);
    let (mut third, status) = listen(&served, ALICE, 3).await;
    assert_eq!(status, 429);
    let mut body = String::new();
    tokio::time::timeout(PATIENCE, third.read_to_string(&mut body))
        .await
        .expect("the refusal in time")
        .expect("read");
    let error: Value = serde_json::from_str(&body).expect("a JSON-RPC error");
    assert_eq!(error["id"], 3, "the refusal answers the listen: {error}");
    assert_eq!(
        error["error"]["data"]["error"]["code"], "CAPACITY",
        "{error}"
    );
    assert_eq!(
        error["error"]["data"]["error"]["details"]["max_sessions_per_principal"], 2,
        "{error}"
    );
    // Alice's bound is hers, and a stream that ends gives its place back.
    let (_bobs, status) = listen(&served, BOB, 4).await;
    assert_eq!(status, 200);
    drop(first);
    listen_once_room(&served, ALICE).await;
    served.shutdown().await;
}

#[tokio::test]
async fn a_listen_stream_ends_at_the_stream_deadline_and_gives_its_place_back() {
    let served = serve_with(
        |carmy| carmy.reports_resource_changes(),
        |http| {
            http.max_sessions_per_principal(1)
                .stream_timeout(Duration::from_millis(300))
        },
    )
    .await;
    let (mut stream, status) = listen(&served, ALICE, 1).await;
    assert_eq!(status, 200);
    assert!(
        closed_within(&mut stream, PATIENCE).await,
        "the listen stream ended"
    );
    listen_once_room(&served, ALICE).await;
    served.shutdown().await;
}

#[tokio::test]
async fn a_request_id_longer_than_request_ids_may_be_is_refused() {
    let served = serve(|http| http.stateless(true)).await;
    let auth = bearer(ALICE);
    let list = |id: &str| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }).to_string();
    let longest = "i".repeat(carmy_core::MAX_REQUEST_ID_LEN);
    let listed = exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        &list(&longest),
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.answer()["id"], longest.as_str());

    let longer = format!("{longest}i");
    let refused = exchange(
        served.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        &list(&longer),
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    let error = json_rpc_error(&refused);
    assert_eq!(error["id"], Value::Null, "the id is not echoed: {error}");
    assert_eq!(error["error"]["code"], -32600, "{error}");
    let data = &error["error"]["data"]["error"];
    assert_eq!(data["code"], "INVALID_REQUEST_ID", "{error}");
    assert_eq!(
        data["details"]["max_length"],
        carmy_core::MAX_REQUEST_ID_LEN,
        "{error}"
    );
    served.shutdown().await;
}

#[tokio::test]
async fn methods_a_revision_lacks_are_not_found_404_and_the_rest_are_served() {
    let served = serve(|http| http.stateless(true)).await;
    let auth = bearer(ALICE);
    let modern = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let post = |id: u64, method: &'static str, params: Value| {
        let auth = auth.clone();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        async move {
            exchange(
                served.addr,
                "POST",
                "/mcp",
                &[
                    ("Authorization", &auth),
                    ("MCP-Protocol-Version", "2026-07-28"),
                    ("Mcp-Method", method),
                ],
                &body.to_string(),
            )
            .await
        }
    };
    // 2026-07-28 removed these: not found, whatever their params, with the request's id.
    for (id, method) in [
        (11, "initialize"),
        (12, "ping"),
        (13, "logging/setLevel"),
        (14, "resources/subscribe"),
        (15, "resources/unsubscribe"),
        (16, "no/such/method"),
    ] {
        let answer = post(id, method, json!({ "_meta": modern })).await;
        assert_eq!(answer.status, 404, "{method}: {}", answer.body);
        let [message] = &answer.messages()[..] else {
            panic!("{method}: one message expected: {}", answer.body)
        };
        assert_eq!(message["id"], id, "{method}: {message}");
        assert_eq!(message["error"]["code"], -32601, "{method}: {message}");
    }
    // What it kept is served, and bad params of a kept method stay invalid params.
    let listed = post(20, "tools/list", json!({ "_meta": modern })).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(
        listed.messages()[0]["result"]["tools"].is_array(),
        "{}",
        listed.body
    );
    let bad = post(21, "resources/read", json!({ "_meta": modern, "uri": 7 })).await;
    let [message] = &bad.messages()[..] else {
        panic!("one message expected: {}", bad.body)
    };
    assert_eq!(message["error"]["code"], -32602, "{message}");
    served.shutdown().await;
}

/// [`exchange`] from the local address `source` (any of 127.0.0.0/8 is this machine).
async fn exchange_from(source: [u8; 4], served: &Served, headers: &[(&str, &str)]) -> Exchange {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::from((source, 0)))
        .expect("bind the source address");
    let stream = socket.connect(served.addr).await.expect("connect");
    let body = call_body(
        1,
        "place_order",
        json!({ "sku": "MOUSE-1", "quantity": 1 }),
        None,
    );
    exchange_on(
        stream,
        &request_bytes(served.addr, "POST", "/mcp", headers, &body),
    )
    .await
}

#[tokio::test]
async fn an_address_over_its_rate_limit_gets_429_with_retry_after_before_anything_else() {
    // Two at once, then one a second.
    let limit = carmy_core::RateLimit::per_minute(60).burst(2);
    let served = serve(|http| http.stateless(true).rate_limit(limit)).await;
    let alice = bearer(ALICE);
    let with_token = [("Authorization", alice.as_str())];
    let home = [127, 0, 0, 1];
    assert_eq!(exchange_from(home, &served, &with_token).await.status, 200);
    // A request without credentials takes from the bucket too: floods of bad tokens are limited.
    assert_eq!(exchange_from(home, &served, &[]).await.status, 401);
    let refused = exchange_from(home, &served, &with_token).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("1"));
    let error = &json_rpc_error(&refused)["error"];
    assert_eq!(error["code"], -32000);
    let data = &error["data"]["error"];
    assert_eq!(data["code"], "RATE_LIMITED", "{error}");
    assert_eq!(data["retryable"], true);
    assert_eq!(data["details"]["requests"], 60);
    assert_eq!(data["details"]["burst"], 2);
    let wait = data["details"]["retry_after_ms"].as_u64().unwrap();
    assert!((1..=1000).contains(&wait), "{wait}");
    // Refused before the tool: it ran once, for the first request.
    assert_eq!(served.order_runs.load(Ordering::SeqCst), 1);

    // Health stays open, and another address has its own bucket.
    let health = exchange(served.addr, "GET", "/health", &[], "").await;
    assert_eq!(health.status, 200);
    let elsewhere = exchange_from([127, 0, 0, 2], &served, &with_token).await;
    assert_eq!(elsewhere.status, 200, "{}", elsewhere.body);

    // Once the wait is over, the address is served again.
    tokio::time::sleep(Duration::from_millis(wait)).await;
    assert_eq!(exchange_from(home, &served, &with_token).await.status, 200);
    served.shutdown().await;
}

#[tokio::test]
async fn cors_answers_an_allowed_origin_s_preflight_and_nothing_to_a_foreign_one() {
    let served = serve(|http| {
        http.stateless(true)
            .allowed_origins(["https://inspector.example"])
    })
    .await;
    let preflight = |origin: &'static str| {
        let addr = served.addr;
        async move {
            exchange(
                addr,
                "OPTIONS",
                "/mcp",
                &[
                    ("Origin", origin),
                    ("Access-Control-Request-Method", "POST"),
                    (
                        "Access-Control-Request-Headers",
                        "authorization, content-type, mcp-protocol-version, mcp-session-id",
                    ),
                ],
                "",
            )
            .await
        }
    };
    let allowed = preflight("https://inspector.example").await;
    assert_eq!(allowed.status, 200, "{:?}", allowed.headers);
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("https://inspector.example")
    );
    let methods = allowed.header("access-control-allow-methods").unwrap();
    assert!(
        methods.contains("POST") && methods.contains("DELETE"),
        "{methods}"
    );
    let headers = allowed.header("access-control-allow-headers").unwrap();
    for name in [
        "authorization",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
    ] {
        assert!(headers.contains(name), "{name} not in {headers}");
    }
    assert_eq!(allowed.header("access-control-allow-credentials"), None);
    assert_eq!(served.order_runs.load(Ordering::SeqCst), 0);

    let foreign = preflight("https://evil.example").await;
    assert_eq!(foreign.header("access-control-allow-origin"), None);

    // The answer itself: readable by the allowed page, with the headers it may read.
    let alice = bearer(ALICE);
    let body = call_body(
        1,
        "place_order",
        json!({ "sku": "MOUSE-1", "quantity": 1 }),
        None,
    );
    let headers = [
        ("Origin", "https://inspector.example"),
        ("Authorization", alice.as_str()),
    ];
    let answer = exchange(served.addr, "POST", "/mcp", &headers, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(
        answer.header("access-control-allow-origin"),
        Some("https://inspector.example")
    );
    let exposed = answer.header("access-control-expose-headers").unwrap();
    assert!(exposed.contains("mcp-session-id") && exposed.contains("www-authenticate"));
    // A foreign page's request is still refused, CORS or not.
    let headers = [
        ("Origin", "https://evil.example"),
        ("Authorization", alice.as_str()),
    ];
    let refused = exchange(served.addr, "POST", "/mcp", &headers, &body).await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.header("access-control-allow-origin"), None);
    served.shutdown().await;
}

#[tokio::test]
async fn cors_credentials_only_where_configured_and_cors_can_be_off() {
    let origin = [
        ("Origin", "http://localhost:6274"),
        ("Access-Control-Request-Method", "POST"),
    ];
    let served = serve(|http| http.cors_credentials(true)).await;
    let answer = exchange(served.addr, "OPTIONS", "/mcp", &origin, "").await;
    assert_eq!(
        answer.header("access-control-allow-credentials"),
        Some("true")
    );
    assert_eq!(
        answer.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    served.shutdown().await;

    let served = serve(|http| http.cors(false)).await;
    let answer = exchange(served.addr, "OPTIONS", "/mcp", &origin, "").await;
    assert_eq!(answer.header("access-control-allow-origin"), None);
    served.shutdown().await;
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RoutedInput {
    /// Repeated in `Mcp-Param-Region` on 2026-07-28 (SEP-2243).
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

/// Answers the region it was routed by.
struct Routed;

impl Tool for Routed {
    type Input = RoutedInput;
    type Output = String;
    const SPEC: ToolSpec =
        ToolSpec::new("routed", Effect::None).description("Answers its `region`.");

    async fn run(&self, input: RoutedInput, _: Invocation) -> Result<String, AgentError> {
        Ok(input.region)
    }
}

#[tokio::test]
async fn an_mcp_param_header_that_differs_from_the_body_gets_400_header_mismatch() {
    for stateless in [true, false] {
        let served = serve_with(|carmy| carmy.tool(Routed), |http| http.stateless(stateless)).await;
        let auth = bearer(ALICE);
        let call = |id: u64, region: &'static str, header: Option<&'static str>| {
            let auth = auth.clone();
            let body = json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "routed", "arguments": { "region": region }, "_meta": modern_meta() }
            });
            async move {
                let mut headers = vec![
                    ("Authorization", auth.as_str()),
                    ("MCP-Protocol-Version", "2026-07-28"),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "routed"),
                ];
                if let Some(header) = header {
                    headers.push(("Mcp-Param-Region", header));
                }
                exchange(served.addr, "POST", "/mcp", &headers, &body.to_string()).await
            }
        };
        for (id, region, header, why) in [
            (1, "eu-west", Some("us-east"), "a different value"),
            (2, "eu-west", None, "a missing header"),
            (3, "Hello", Some("=?base64?SGVsbG8?="), "unpadded base64"),
            (4, "Hello", Some("=?base64?SGVs!!!bG8=?="), "not base64"),
        ] {
            let answer = call(id, region, header).await;
            assert_eq!(answer.status, 400, "{why} ({stateless}): {}", answer.body);
            let [message] = &answer.messages()[..] else {
                panic!("{why}: one message expected: {}", answer.body)
            };
            assert_eq!(message["id"], id, "{why}: {message}");
            assert_eq!(message["error"]["code"], -32020, "{why}: {message}");
        }
        for (id, region, header) in [
            (5, "eu-west", "eu-west"),
            (6, "Hello", "=?base64?SGVsbG8=?="),
            (7, "SGVsbG8=", "SGVsbG8="),
        ] {
            let answer = call(id, region, Some(header)).await;
            assert_eq!(answer.status, 200, "{header}: {}", answer.body);
            let answer = answer.answer();
            assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
            assert!(answer.to_string().contains(region), "{answer}");
        }
        served.shutdown().await;
    }
}
