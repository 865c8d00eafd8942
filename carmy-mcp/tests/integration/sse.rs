//! The legacy HTTP+SSE transport (`HttpServer::legacy_sse`): its stream and endpoint, the
//! round trip through a session, and the protections it shares with streamable HTTP, driven
//! with raw HTTP/1.1 over real TCP.

use crate::common;

use std::{net::SocketAddr, time::Duration};

use carmy_core::{
    AgentError, Context, Effect, ExecutionStatus, Invocation, Runtime, Tool, ToolSpec,
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
    probe: mpsc::UnboundedReceiver<ProbeEvent>,
    stop: Option<oneshot::Sender<()>>,
    server: JoinHandle<Result<(), carmy_mcp::HttpError>>,
}

/// The testbed on 127.0.0.1 with the legacy transport on, alice and bob holding tokens.
async fn serve(configure: impl FnOnce(HttpServer) -> HttpServer) -> Served {
    let (probe_tx, probe) = mpsc::unbounded_channel();
    let testbed = common::tools::testbed_with(probe_tx, |carmy| carmy.tool(Pad));
    let tokens = BearerTokens::new()
        .token(ALICE, "alice", ["confirm:delete_order"])
        .token(BOB, "bob", Vec::<String>::new());
    let http = HttpServer::new(McpServer::new(testbed.runtime.clone()).context(Context::new()))
        .authenticator(tokens)
        .legacy_sse(true);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel();
    let server = tokio::spawn(configure(http).serve_with_shutdown(listener, async {
        let _ = stopped.await;
    }));
    Served {
        addr,
        runtime: testbed.runtime,
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

fn auth(token: &str) -> String {
    format!("Bearer {token}")
}

/// One request on its own connection: its status and body.
async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let (status, _, body) = exchange_with_head(addr, method, path, headers, body).await;
    (status, body)
}

/// One request on its own connection: its status, head and body.
async fn exchange_with_head(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
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
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("send head");
    stream.write_all(body.as_bytes()).await.expect("send body");
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw))
        .await
        .expect("answered in time")
        .expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_owned(), body.to_owned())
}

/// An open event stream (`GET /sse`).
struct Stream {
    tcp: TcpStream,
    seen: String,
    /// Where to post: the `endpoint` event's data.
    endpoint: String,
}

impl Stream {
    /// Opens a stream as whoever `headers` say; `Err` holds the status of a refusal.
    async fn open(addr: SocketAddr, headers: &[(&str, &str)]) -> Result<Self, u16> {
        Self::open_on(
            TcpStream::connect(addr).await.expect("connect"),
            addr,
            headers,
        )
        .await
    }

    /// [`open`](Self::open), on a connection that reads little at a time: its receive buffer
    /// is small, so the server's writes stop soon when it does not read.
    async fn open_slow_reader(addr: SocketAddr, headers: &[(&str, &str)]) -> Result<Self, u16> {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .set_recv_buffer_size(4096)
            .expect("a small receive buffer");
        let tcp = socket.connect(addr).await.expect("connect");
        Self::open_on(tcp, addr, headers).await
    }

    async fn open_on(
        mut tcp: TcpStream,
        addr: SocketAddr,
        headers: &[(&str, &str)],
    ) -> Result<Self, u16> {
        let mut head =
            format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        tcp.write_all(head.as_bytes()).await.expect("send");
        let mut stream = Self {
            tcp,
            seen: String::new(),
            endpoint: String::new(),
        };
        while !stream.seen.contains("\r\n\r\n") {
            stream.read_more().await;
        }
        let status: u16 = stream.seen[9..12].parse().expect("a status");
        if status != 200 {
            return Err(status);
        }
        assert!(
            stream
                .seen
                .to_ascii_lowercase()
                .contains("content-type: text/event-stream"),
            "{}",
            stream.seen
        );
        let (name, data) = stream.next_event().await;
        assert_eq!(name, "endpoint", "the first event names the endpoint");
        stream.endpoint = data;
        Ok(stream)
    }

    async fn read_more(&mut self) {
        let mut buffer = [0u8; 8192];
        let read = tokio::time::timeout(PATIENCE, self.tcp.read(&mut buffer))
            .await
            .expect("the stream spoke in time")
            .expect("read");
        assert!(read > 0, "the stream ended; seen: {}", self.seen);
        self.seen
            .push_str(&String::from_utf8_lossy(&buffer[..read]));
    }

    /// The next event: its name and data (each event is one chunk of the response).
    async fn next_event(&mut self) -> (String, String) {
        loop {
            if let Some(start) = self.seen.find("event: ")
                && let Some(length) = self.seen[start..].find("\n\n")
            {
                let event = self.seen[start..start + length].to_owned();
                self.seen.drain(..start + length + 2);
                let name = event.lines().next().expect("a name")["event: ".len()..].to_owned();
                let data = event
                    .lines()
                    .find_map(|line| line.strip_prefix("data: "))
                    .expect("data")
                    .to_owned();
                return (name, data);
            }
            self.read_more().await;
        }
    }

    /// The next `message` event's JSON.
    async fn next_message(&mut self) -> Value {
        let (name, data) = self.next_event().await;
        assert_eq!(name, "message");
        serde_json::from_str(&data).expect("JSON in a message event")
    }

    /// Posts `message` to this stream's session as whoever `headers` say.
    async fn post(
        &self,
        addr: SocketAddr,
        headers: &[(&str, &str)],
        message: &Value,
    ) -> (u16, String) {
        exchange(addr, "POST", &self.endpoint, headers, &message.to_string()).await
    }

    /// Runs the 2025-11-25 lifecycle as `token`.
    async fn initialize(&mut self, addr: SocketAddr, token: &str) -> Value {
        let bearer = auth(token);
        let headers = [("Authorization", bearer.as_str())];
        let initialize = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2024-11-05", "capabilities": {},
                        "clientInfo": { "name": "raw", "version": "1" } }
        });
        assert_eq!(self.post(addr, &headers, &initialize).await.0, 202);
        let answer = self.next_message().await;
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(self.post(addr, &headers, &initialized).await.0, 202);
        answer
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct PadInput {
    bytes: usize,
    /// Milliseconds to wait before answering.
    delay_ms: Option<u64>,
}

/// Answers with as many bytes as asked, when asked: large answers, without requests as large.
struct Pad;

impl Tool for Pad {
    type Input = PadInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("pad", Effect::None).description("Answers `bytes` bytes.");

    async fn run(&self, input: PadInput, _: Invocation) -> Result<String, AgentError> {
        if let Some(delay) = input.delay_ms {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        Ok("x".repeat(input.bytes))
    }
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments } })
}

#[tokio::test]
async fn the_stream_names_the_endpoint_and_carries_the_answers_to_posted_messages() {
    let served = serve(|http| http).await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let mut stream = Stream::open(served.addr, &headers).await.expect("opened");
    let id = stream
        .endpoint
        .strip_prefix("/messages?sessionId=")
        .expect("the endpoint names the session");
    assert!(id.len() >= 32, "an unguessable id: {id}");

    let initialized = stream.initialize(served.addr, ALICE).await;
    assert_eq!(initialized["id"], json!(1));
    assert_eq!(
        initialized["result"]["protocolVersion"],
        json!("2024-11-05")
    );
    assert!(initialized["result"]["capabilities"]["tools"].is_object());

    let (status, _) = stream
        .post(
            served.addr,
            &headers,
            &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
        )
        .await;
    assert_eq!(status, 202);
    let listed = stream.next_message().await;
    assert_eq!(listed["id"], json!(2));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"word_count"), "{names:?}");

    let (status, body) = stream
        .post(
            served.addr,
            &headers,
            &call(3, "word_count", json!({ "text": "one two three" })),
        )
        .await;
    assert_eq!((status, body.as_str()), (202, "Accepted"));
    let answer = stream.next_message().await;
    assert_eq!(answer["id"], json!(3));
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        json!("3"),
        "{answer}"
    );

    // The call runs as the token's principal: alice's grant lets her delete, which the host
    // context alone would not.
    let delete = call(4, "delete_order", json!({ "order_id": "order-1" }));
    assert_eq!(stream.post(served.addr, &headers, &delete).await.0, 202);
    let deleted = stream.next_message().await;
    assert_eq!(deleted["result"]["isError"], json!(false), "{deleted}");
    served.shutdown().await;
}

#[tokio::test]
async fn a_post_to_an_unknown_session_gets_404_and_one_without_a_session_400() {
    let served = serve(|http| http).await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }).to_string();
    let (status, _) = exchange(
        served.addr,
        "POST",
        "/messages?sessionId=nope",
        &headers,
        &ping,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = exchange(served.addr, "POST", "/messages", &headers, &ping).await;
    assert_eq!(status, 400);
    served.shutdown().await;
}

#[tokio::test]
async fn without_valid_credentials_neither_stream_nor_post_is_served() {
    let served = serve(|http| http).await;
    assert_eq!(Stream::open(served.addr, &[]).await.err(), Some(401));
    let wrong = auth("wrong-token-0123456789");
    assert_eq!(
        Stream::open(served.addr, &[("Authorization", &wrong)])
            .await
            .err(),
        Some(401)
    );

    let bearer = auth(ALICE);
    let mut stream = Stream::open(served.addr, &[("Authorization", &bearer)])
        .await
        .expect("opened");
    stream.initialize(served.addr, ALICE).await;
    let (status, _) = stream
        .post(
            served.addr,
            &[],
            &call(2, "word_count", json!({ "text": "x" })),
        )
        .await;
    assert_eq!(status, 401);
    served.shutdown().await;
}

#[tokio::test]
async fn a_foreign_origin_or_host_gets_403_and_a_loopback_page_is_served() {
    let served = serve(|http| http).await;
    let bearer = auth(ALICE);
    let evil = [
        ("Authorization", bearer.as_str()),
        ("Origin", "https://evil.example"),
    ];
    assert_eq!(Stream::open(served.addr, &evil).await.err(), Some(403));
    let rebound = [("Authorization", bearer.as_str()), ("Host", "evil.example")];
    let (status, _) = exchange(served.addr, "GET", "/sse", &rebound, "").await;
    assert_eq!(status, 403);

    let page = [
        ("Authorization", bearer.as_str()),
        ("Origin", "http://localhost:5173"),
    ];
    let mut stream = Stream::open(served.addr, &page)
        .await
        .expect("a loopback page is served");
    stream.initialize(served.addr, ALICE).await;
    let (status, _) = stream
        .post(
            served.addr,
            &evil,
            &json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }),
        )
        .await;
    assert_eq!(status, 403);
    served.shutdown().await;
}

#[tokio::test]
async fn another_principals_post_to_a_session_is_answered_as_for_an_unknown_one() {
    let served = serve(|http| http).await;
    let alice = auth(ALICE);
    let bob = auth(BOB);
    let mut stream = Stream::open(served.addr, &[("Authorization", &alice)])
        .await
        .expect("opened");
    stream.initialize(served.addr, ALICE).await;
    let call = call(2, "word_count", json!({ "text": "a b" }));
    let theirs = stream
        .post(served.addr, &[("Authorization", &bob)], &call)
        .await;
    let unknown = exchange(
        served.addr,
        "POST",
        "/messages?sessionId=0123456789abcdef0123456789abcdef",
        &[("Authorization", &bob)],
        &call.to_string(),
    )
    .await;
    assert_eq!(theirs.0, 404);
    assert_eq!(theirs, unknown, "nothing tells another's session from none");
    // Alice's session is untouched: her call is answered, and only hers arrives on it.
    assert_eq!(
        stream
            .post(served.addr, &[("Authorization", &alice)], &call)
            .await
            .0,
        202
    );
    let answer = stream.next_message().await;
    assert_eq!(
        answer["result"]["content"][0]["text"],
        json!("2"),
        "{answer}"
    );
    served.shutdown().await;
}

#[tokio::test]
async fn an_oversized_body_gets_413() {
    let served = serve(|http| http.max_body_bytes(1024)).await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let mut stream = Stream::open(served.addr, &headers).await.expect("opened");
    stream.initialize(served.addr, ALICE).await;
    let big = call(2, "word_count", json!({ "text": "word ".repeat(400) }));
    assert_eq!(stream.post(served.addr, &headers, &big).await.0, 413);
    let small = call(3, "word_count", json!({ "text": "word" }));
    assert_eq!(stream.post(served.addr, &headers, &small).await.0, 202);
    assert_eq!(stream.next_message().await["id"], json!(3));
    served.shutdown().await;
}

async fn expect_cancelled(served: &mut Served) {
    let ProbeEvent::Stopped { id, cancelled } = next_probe(&mut served.probe).await else {
        panic!("expected the slow tool to stop");
    };
    assert!(cancelled, "the tool saw its context cancelled");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while served.runtime.execution(&id).expect("recorded").status != ExecutionStatus::Cancelled {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not cancelled in time"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn start_slow(served: &mut Served, stream: &Stream, headers: &[(&str, &str)]) {
    let slow = call(2, "slow", json!({ "steps": 10_000, "step_ms": 10 }));
    assert_eq!(stream.post(served.addr, headers, &slow).await.0, 202);
    let ProbeEvent::Started(_) = next_probe(&mut served.probe).await else {
        panic!("expected the slow tool to start");
    };
}

#[tokio::test]
async fn closing_the_stream_closes_the_session_and_cancels_its_calls() {
    let mut served = serve(|http| http).await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let mut stream = Stream::open(served.addr, &headers).await.expect("opened");
    stream.initialize(served.addr, ALICE).await;
    start_slow(&mut served, &stream, &headers).await;
    let endpoint = stream.endpoint.clone();
    drop(stream);
    expect_cancelled(&mut served).await;
    let ping = json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" }).to_string();
    let (status, _) = exchange(served.addr, "POST", &endpoint, &headers, &ping).await;
    assert_eq!(status, 404, "a closed session is unknown");
    served.shutdown().await;
}

#[tokio::test]
async fn the_request_deadline_cancels_a_call() {
    let mut served = serve(|http| http.request_timeout(Duration::from_millis(300))).await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let mut stream = Stream::open(served.addr, &headers).await.expect("opened");
    stream.initialize(served.addr, ALICE).await;
    start_slow(&mut served, &stream, &headers).await;
    expect_cancelled(&mut served).await;
    let answer = stream.next_message().await;
    assert_eq!(
        answer["id"],
        json!(2),
        "the cancelled call is answered: {answer}"
    );
    served.shutdown().await;
}

#[tokio::test]
async fn sessions_are_bounded_per_principal_and_a_closed_stream_frees_its_place() {
    let served = serve(|http| http.max_sessions_per_principal(1)).await;
    let alice = auth(ALICE);
    let bob = auth(BOB);
    let first = Stream::open(served.addr, &[("Authorization", &alice)])
        .await
        .expect("opened");
    assert_eq!(
        Stream::open(served.addr, &[("Authorization", &alice)])
            .await
            .err(),
        Some(429)
    );
    let _bobs = Stream::open(served.addr, &[("Authorization", &bob)])
        .await
        .expect("bob's place is his own");
    drop(first);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match Stream::open(served.addr, &[("Authorization", &alice)]).await {
            Ok(_) => break,
            Err(status) => {
                assert_eq!(status, 429);
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the place was not freed"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    served.shutdown().await;
}

// What a session's client does not do: read its stream, or end its calls (issue 33, rows 1
// and 2).

/// A refusal's JSON-RPC error, with its status and `Retry-After`.
async fn post_refused(
    addr: SocketAddr,
    stream: &Stream,
    headers: &[(&str, &str)],
    message: &Value,
) -> (u16, Option<String>, Value) {
    let (status, head, body) = exchange_with_head(
        addr,
        "POST",
        &stream.endpoint,
        headers,
        &message.to_string(),
    )
    .await;
    let retry_after = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("retry-after")
            .then(|| value.trim().to_owned())
    });
    let error = serde_json::from_str(&body).unwrap_or(Value::Null);
    (status, retry_after, error)
}

/// Bytes of each answer posted to a stream nobody reads.
const PAD: usize = 64 * 1024;

/// Posts calls answered [`PAD`] bytes each (after `delay_ms`), `count` at most, until one is
/// refused: the ids accepted, and the refusal if there was one.
async fn post_pads(
    addr: SocketAddr,
    stream: &Stream,
    headers: &[(&str, &str)],
    count: u64,
    delay_ms: u64,
) -> (Vec<u64>, Option<(u16, Option<String>, Value)>) {
    let mut accepted = Vec::new();
    for id in 10..10 + count {
        let pad = call(id, "pad", json!({ "bytes": PAD, "delay_ms": delay_ms }));
        let answer = post_refused(addr, stream, headers, &pad).await;
        if answer.0 != 202 {
            return (accepted, Some(answer));
        }
        accepted.push(id);
    }
    (accepted, None)
}

#[tokio::test]
async fn a_client_behind_on_its_stream_is_refused_new_requests_and_loses_no_answer() {
    let served = serve(|http| http.max_outbox_bytes(1024 * 1024)).await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let mut stream = Stream::open_slow_reader(served.addr, &headers)
        .await
        .expect("opened");
    stream.initialize(served.addr, ALICE).await;
    let (accepted, refused) = post_pads(served.addr, &stream, &headers, 1000, 0).await;
    let (status, retry_after, error) = refused.expect("a request refused");
    assert_eq!(status, 429, "{error}");
    assert!(retry_after.is_some(), "a refusal says when to retry");
    assert_eq!(
        error["id"],
        10 + accepted.len() as u64,
        "the refusal answers the request: {error}"
    );
    assert_eq!(
        error["error"]["data"]["error"]["code"], "CAPACITY",
        "{error}"
    );
    assert_eq!(
        error["error"]["data"]["error"]["retryable"], true,
        "{error}"
    );
    assert_eq!(
        error["error"]["data"]["error"]["details"]["max_outbox_bytes"],
        1024 * 1024,
        "{error}"
    );
    // What answers nothing still goes through: a cancellation is never refused.
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": { "requestId": 999 } });
    assert_eq!(stream.post(served.addr, &headers, &cancel).await.0, 202);

    // Every request accepted is answered in full once the client reads.
    for &id in &accepted {
        let answer = stream.next_message().await;
        assert_eq!(answer["id"], id);
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("a full answer to {id}"));
        assert_eq!(text.len(), PAD + 2, "{id}: a JSON string of the padding");
    }
    let count = call(1000, "word_count", json!({ "text": "a b" }));
    assert_eq!(stream.post(served.addr, &headers, &count).await.0, 202);
    assert_eq!(stream.next_message().await["id"], 1000);
    served.shutdown().await;
}

/// Posts `ping` to `stream`'s session until it is unknown (`404`), within [`PATIENCE`].
async fn until_closed(addr: SocketAddr, stream: &Stream, headers: &[(&str, &str)]) {
    let ping = json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" });
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (status, _) = stream.post(addr, headers, &ping).await;
        if status == 404 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session is still open ({status})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn answers_its_client_leaves_unread_past_the_outbox_bound_close_the_session() {
    let served = serve(|http| {
        http.max_outbox_bytes(256 * 1024)
            .max_in_flight(1000)
            .write_timeout(Duration::from_secs(600))
    })
    .await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let mut stream = Stream::open_slow_reader(served.addr, &headers)
        .await
        .expect("opened");
    stream.initialize(served.addr, ALICE).await;
    // Taken while nothing waits; answered all at once, more than the connection's buffers
    // and the outbox hold.
    let (accepted, _) = post_pads(served.addr, &stream, &headers, 200, 2000).await;
    assert!(accepted.len() >= 150, "{} taken", accepted.len());
    until_closed(served.addr, &stream, &headers).await;
    // The server serves on.
    let mut again = Stream::open(served.addr, &headers).await.expect("opened");
    again.initialize(served.addr, ALICE).await;
    served.shutdown().await;
}

#[tokio::test]
async fn a_stream_that_takes_no_bytes_is_closed_at_the_write_deadline() {
    let served = serve(|http| {
        http.max_outbox_bytes(64 * 1024 * 1024)
            .write_timeout(Duration::from_millis(300))
    })
    .await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let mut stream = Stream::open_slow_reader(served.addr, &headers)
        .await
        .expect("opened");
    stream.initialize(served.addr, ALICE).await;
    // More than the connection's buffers hold, well within the outbox: nothing is refused,
    // unless the session is already closed.
    let (_, refused) = post_pads(served.addr, &stream, &headers, 150, 0).await;
    if let Some((status, _, error)) = refused {
        assert_eq!(status, 404, "{error}");
    }
    // The client reads nothing more: its stream, and with it its session, is closed.
    until_closed(served.addr, &stream, &headers).await;
    served.shutdown().await;
}

#[tokio::test]
async fn calls_in_flight_are_bounded_per_session_and_a_cancelled_one_gives_its_place_back() {
    let mut served = serve(|http| http.max_in_flight(2)).await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let mut stream = Stream::open(served.addr, &headers).await.expect("opened");
    stream.initialize(served.addr, ALICE).await;
    for id in [2, 3] {
        let slow = call(id, "slow", json!({ "steps": 10_000, "step_ms": 10 }));
        assert_eq!(stream.post(served.addr, &headers, &slow).await.0, 202);
        let ProbeEvent::Started(_) = next_probe(&mut served.probe).await else {
            panic!("expected the slow tool to start");
        };
    }
    let count = call(4, "word_count", json!({ "text": "a b" }));
    let (status, retry_after, error) = post_refused(served.addr, &stream, &headers, &count).await;
    assert_eq!(status, 429, "{error}");
    assert!(retry_after.is_some(), "a refusal says when to retry");
    assert_eq!(error["id"], 4, "{error}");
    assert_eq!(
        error["error"]["data"]["error"]["code"], "CAPACITY",
        "{error}"
    );
    assert_eq!(
        error["error"]["data"]["error"]["details"]["max_in_flight"], 2,
        "{error}"
    );

    // Cancelled calls are answered nothing, and give their places back.
    for id in [2, 3] {
        let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": { "requestId": id } });
        assert_eq!(stream.post(served.addr, &headers, &cancel).await.0, 202);
        let ProbeEvent::Stopped { cancelled, .. } = next_probe(&mut served.probe).await else {
            panic!("expected the slow tool to stop");
        };
        assert!(cancelled);
    }
    let deadline = tokio::time::Instant::now() + PATIENCE;
    for id in 5..7 {
        let count = call(id, "word_count", json!({ "text": "a b" }));
        loop {
            let (status, _) = stream.post(served.addr, &headers, &count).await;
            if status == 202 {
                break;
            }
            assert_eq!(status, 429);
            assert!(
                tokio::time::Instant::now() < deadline,
                "the cancelled calls kept their places"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(stream.next_message().await["id"], id);
    }
    served.shutdown().await;
}

#[tokio::test]
async fn a_request_id_longer_than_request_ids_may_be_is_refused() {
    let served = serve(|http| http).await;
    let bearer = auth(ALICE);
    let headers = [("Authorization", bearer.as_str())];
    let mut stream = Stream::open(served.addr, &headers).await.expect("opened");
    stream.initialize(served.addr, ALICE).await;
    let longest = "i".repeat(carmy_core::MAX_REQUEST_ID_LEN);
    let ping = |id: &str| json!({ "jsonrpc": "2.0", "id": id, "method": "ping" });
    assert_eq!(
        stream.post(served.addr, &headers, &ping(&longest)).await.0,
        202
    );
    assert_eq!(stream.next_message().await["id"], longest.as_str());

    let (status, _, error) = post_refused(
        served.addr,
        &stream,
        &headers,
        &ping(&format!("{longest}i")),
    )
    .await;
    assert_eq!(status, 400, "{error}");
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
async fn without_the_option_there_is_no_legacy_transport() {
    let served = serve(|http| http.legacy_sse(false)).await;
    let bearer = auth(ALICE);
    let (status, _) = exchange(
        served.addr,
        "GET",
        "/sse",
        &[("Authorization", &bearer)],
        "",
    )
    .await;
    assert_eq!(status, 404);
    served.shutdown().await;
}
