//! Request ids and cancellations on the line transport: an id is the JSON value the client
//! wrote, a cancel stops the one request it names, even while requests wait at the in-flight
//! bound, an id reused after its cancel names the new request, and `initialize` comes once.
//! The testbed binary's real stdio in both lifecycles, and the transport in process at a bound
//! of two to see the waiting requests one by one.

use crate::common;

use std::time::Duration;

use carmy_mcp::{LineTransport, McpServer};
use common::{PATIENCE, RawChild, tools};
use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn slow(id: Value, steps: u32) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "slow", "arguments": { "steps": steps, "step_ms": 100 } } })
}

fn cancel(id: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id } })
}

fn with_meta(mut message: Value, meta: &Value) -> Value {
    if message.get("params").is_none() {
        message["params"] = json!({});
    }
    message["params"]["_meta"] = meta.clone();
    message
}

#[tokio::test]
async fn the_2026_lifecycle_keeps_ids_exact_and_has_no_initialize() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" }
    });
    let mut child = RawChild::spawn(&[]);
    child
        .send(&with_meta(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
            &meta,
        ))
        .await;
    assert_eq!(child.receive().await["id"], 1);
    // `initialize` is not a method of this session.
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "initialize",
                       "params": { "protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": { "name": "late", "version": "0" } } }))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // Cancelled, and its id reused at once: the new request is answered, the old one not.
    child.send(&with_meta(slow(json!("r"), 50), &meta)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    child.send(&cancel(json!("r"))).await;
    child.send(&with_meta(slow(json!("r"), 1), &meta)).await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], "r", "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["steps"], 1,
        "{answer}"
    );
    // A cancel naming `7.0` leaves request `7` alone.
    child.send(&with_meta(slow(json!(7), 2), &meta)).await;
    child
        .write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7.0}}\n")
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["steps"], 2,
        "{answer}"
    );
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn initialize_comes_once_in_the_legacy_lifecycle() {
    let mut child = RawChild::spawn(&[]);
    child.initialize().await;
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": { "protocolVersion": "2025-11-25",
                                   "capabilities": { "elicitation": {} },
                                   "clientInfo": { "name": "again", "version": "0" } } }))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn a_client_refused_an_unknown_version_may_still_initialize() {
    let mut child = RawChild::spawn(&[]);
    let future = json!({
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" }
    });
    child
        .send(&with_meta(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
            &future,
        ))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["error"].is_object(), "{answer}");
    child.initialize().await;
    assert!(child.finish().await.success());
}

/// The testbed served in process on a line transport with room for two requests in flight.
struct Bounded {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Bounded {
    async fn start() -> Self {
        let (probe, _) = tokio::sync::mpsc::unbounded_channel();
        let server = McpServer::new(tools::testbed(probe).runtime);
        let (client, server_io) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_io);
        let transport = LineTransport::new(server_read, server_write).max_in_flight(2);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(transport).await {
                let _ = running.waiting().await;
            }
        });
        let (read, write) = tokio::io::split(client);
        let mut bounded = Self {
            write,
            read: BufReader::new(read).lines(),
        };
        bounded
            .send(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": { "protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": { "name": "bounded", "version": "0" } } }))
            .await;
        assert_eq!(bounded.receive().await["id"], 0);
        bounded
            .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        bounded
    }

    async fn send(&mut self, message: &Value) {
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.expect("write");
    }

    async fn receive(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.read.next_line())
            .await
            .expect("answered in time")
            .expect("read")
            .expect("open");
        serde_json::from_str(&line).expect("JSON")
    }
}

#[tokio::test]
async fn requests_waiting_when_the_input_ends_are_still_answered() {
    let mut server = Bounded::start().await;
    // Two in flight, one waiting (reading goes on), then the end of the input.
    for id in 1..=3 {
        server.send(&slow(json!(id), 2)).await;
    }
    server.write.shutdown().await.expect("end of input");
    let mut answered = Vec::new();
    for _ in 0..3 {
        let answer = server.receive().await;
        assert_eq!(
            answer["result"]["structuredContent"]["steps"], 2,
            "{answer}"
        );
        answered.push(answer["id"].as_u64().expect("an id"));
    }
    answered.sort_unstable();
    assert_eq!(answered, [1, 2, 3]);
}

#[tokio::test]
async fn at_the_in_flight_bound_requests_wait_and_cancels_pass() {
    let mut server = Bounded::start().await;
    // Two in flight, one waiting (as many as two may wait before reading stops).
    for id in 1..=3 {
        server.send(&slow(json!(id), 5)).await;
    }
    // A duplicate of a waiting request is refused like one of a request in flight.
    server.send(&slow(json!(3), 1)).await;
    let duplicate = server.receive().await;
    assert_eq!(duplicate["id"], 3, "{duplicate}");
    assert_eq!(duplicate["error"]["code"], -32600, "{duplicate}");
    // A waiting request is dropped by its cancel; a running one is stopped.
    server.send(&cancel(json!(3))).await;
    server.send(&cancel(json!(1))).await;
    // The client's stray answers pass too, and are ignored.
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 0, "result": {} }))
        .await;
    // Room for one more, and one waits again.
    server.send(&slow(json!(4), 5)).await;
    server.send(&slow(json!(5), 1)).await;
    let mut answered = Vec::new();
    for _ in 0..3 {
        let answer = server.receive().await;
        assert!(
            answer["result"]["structuredContent"]["steps"].is_number(),
            "{answer}"
        );
        answered.push(answer["id"].as_u64().expect("an id"));
    }
    // 2 and 4 ran at once, then 5 took the place of the first to finish.
    answered.sort_unstable();
    assert_eq!(answered, [2, 4, 5]);
    // Nothing else: 1 and 3 were cancelled.
    server
        .send(&json!({ "jsonrpc": "2.0", "id": "end", "method": "ping" }))
        .await;
    assert_eq!(server.receive().await["id"], "end");
    // Cancelled while waiting, its id is free again.
    server.send(&slow(json!(3), 1)).await;
    let answer = server.receive().await;
    assert_eq!(answer["id"], 3, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["steps"], 1,
        "{answer}"
    );
}
