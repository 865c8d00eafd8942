//! The same server on every transport: rmcp's own framing, Unix sockets, and the testbed binary
//! on real stdio, first through rmcp's client and then byte by byte.

use crate::common;

use carmy_core::Context;
use carmy_mcp::{META_EXECUTION_ID, META_REQUEST_ID, META_STATUS, McpServer};
use common::{
    LIFECYCLES, RawChild, call, call_with, connect, meta, testbed_command, tools, with_meta,
};
use rmcp::{ServiceExt, transport::TokioChildProcess};
use serde_json::{Value, json};

async fn smoke(session: &common::Session) {
    let listed = session.list_tools(None).await.expect("tools/list");
    assert_eq!(listed.tools.len(), 7);
    let result = call(session, "lookup", json!({ "sku": "MOUSE-1" })).await;
    assert_eq!(result.structured_content.expect("structured")["stock"], 12);
}

#[tokio::test]
async fn any_rmcp_transport_serves_it() {
    for lifecycle in LIFECYCLES {
        let (probe, _) = tokio::sync::mpsc::unbounded_channel();
        let server = McpServer::new(tools::testbed(probe).runtime);
        let (client_io, server_io) = tokio::io::duplex(4096);
        // rmcp's own framing, straight through `ServiceExt::serve`.
        let running = tokio::spawn(async move { server.serve(server_io).await });
        let (session, _) = connect(lifecycle, client_io).await;
        smoke(&session).await;
        session.cancel().await.expect("client closes");
        let running = running.await.expect("join").expect("server started");
        running
            .waiting()
            .await
            .expect("server stops when the client leaves");
    }
}

#[tokio::test]
async fn unix_stream_pair_through_service_ext() {
    for lifecycle in LIFECYCLES {
        let (probe, _) = tokio::sync::mpsc::unbounded_channel();
        let server = McpServer::new(tools::testbed(probe).runtime);
        let (client_io, server_io) = tokio::net::UnixStream::pair().expect("socket pair");
        let running = tokio::spawn(async move { server.serve(server_io).await });
        let (session, _) = connect(lifecycle, client_io).await;
        smoke(&session).await;
        session.cancel().await.expect("client closes");
        running.await.expect("join").expect("server started");
    }
}

#[tokio::test]
async fn unix_socket_listener_shares_one_runtime_across_connections() {
    let path = std::env::temp_dir().join(format!("carmy-mcp-test-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).expect("bind");
    let (probe, _) = tokio::sync::mpsc::unbounded_channel();
    let testbed = tools::testbed(probe);
    let server = McpServer::new(testbed.runtime.clone())
        .context(Context::new().with_principal("alice"))
        .max_line_bytes(1 << 20);
    let accept = tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.expect("accept");
            let (read, write) = stream.into_split();
            tokio::spawn(server.clone().serve_io(read, write));
        }
    });

    // An agent places an order, loses the connection, reconnects with the other lifecycle and
    // retries with the same request id: the order is placed once.
    let order = json!({ "sku": "MOUSE-1", "quantity": 1 });
    let mut answers = Vec::new();
    for lifecycle in LIFECYCLES {
        let stream = tokio::net::UnixStream::connect(&path)
            .await
            .expect("connect");
        let (session, _) = connect(lifecycle, stream).await;
        smoke(&session).await;
        let answer = call_with(
            &session,
            "place_order",
            order.clone(),
            with_meta(json!({ META_REQUEST_ID: "retry-across-connections" })),
        )
        .await
        .expect("placed");
        answers.push(answer);
        session.cancel().await.expect("client closes");
    }
    assert_eq!(
        testbed.order_runs.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    assert_eq!(meta(&answers[0], META_STATUS), "succeeded");
    assert_eq!(meta(&answers[1], META_STATUS), "replayed");
    assert_eq!(
        meta(&answers[0], META_EXECUTION_ID),
        meta(&answers[1], META_EXECUTION_ID)
    );

    accept.abort();
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn child_process_over_stdio() {
    for lifecycle in LIFECYCLES {
        let transport = TokioChildProcess::new(testbed_command(&["--principal", "bob"]))
            .expect("spawn the testbed");
        let (session, _) = connect(lifecycle, transport).await;
        let info = session.peer_info().expect("server info");
        assert_eq!(
            info.server_info.as_ref().map(|info| info.name.as_str()),
            Some("carmy-mcp-testbed")
        );
        smoke(&session).await;

        let order = json!({ "sku": "MOUSE-1", "quantity": 3 });
        let key = || with_meta(json!({ META_REQUEST_ID: "k-1" }));
        let first = call_with(&session, "place_order", order.clone(), key())
            .await
            .unwrap();
        let again = call_with(&session, "place_order", order.clone(), key())
            .await
            .unwrap();
        assert_eq!(first.structured_content.as_ref().unwrap()["runs"], 1);
        assert_eq!(
            again.structured_content, first.structured_content,
            "{lifecycle:?}"
        );
        assert_eq!(meta(&again, META_STATUS), "replayed");
        let fresh = call(&session, "place_order", order).await;
        assert_eq!(fresh.structured_content.unwrap()["runs"], 2);

        session
            .cancel()
            .await
            .expect("the client closes the child's stdin");
    }
}

fn error_of(answer: &Value) -> (&Value, i64) {
    let code = answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"));
    (&answer["id"], code)
}

#[tokio::test]
async fn raw_stdio_answers_lines_that_are_not_json() {
    let mut child = RawChild::spawn(&[]);
    // Before the session...
    child.write(b"this is not json\n").await;
    let answer = child.receive().await;
    assert_eq!(error_of(&answer), (&Value::Null, -32700), "{answer}");
    assert!(
        answer.as_object().unwrap().contains_key("id"),
        "`id: null`, not absent"
    );
    child.initialize().await;

    // ...and during it: each answered, and the next request served.
    child
        .write(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\n")
        .await;
    let answer = child.receive().await;
    assert_eq!(error_of(&answer), (&Value::Null, -32700), "{answer}");
    child
        .write(b"[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}]\n")
        .await;
    let answer = child.receive().await;
    assert_eq!(error_of(&answer), (&Value::Null, -32600), "{answer}");
    child.write(b"{\"jsonrpc\":\"2.0\",\"id\":4}\n").await;
    let answer = child.receive().await;
    assert_eq!(error_of(&answer), (&json!(4), -32600), "{answer}");

    child
        .send(&json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/list" }))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["result"]["tools"].as_array().unwrap().len(), 7);
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn raw_stdio_answers_over_long_lines_and_keeps_serving() {
    let mut child = RawChild::spawn(&[]);
    child.initialize().await;
    let big = "x".repeat(carmy_mcp::DEFAULT_MAX_LINE_BYTES);

    // The id is near the start: the error names the request.
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{{"name":"word_count","arguments":{{"text":"{big}"}}}}}}"#
    );
    child.write(format!("{line}\n").as_bytes()).await;
    let answer = child.receive().await;
    assert_eq!(error_of(&answer), (&json!(10), -32600), "{answer}");
    assert_eq!(
        answer["error"]["data"]["max_line_bytes"],
        carmy_mcp::DEFAULT_MAX_LINE_BYTES
    );

    // The id comes last: the error cannot name it.
    let line = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"word_count","arguments":{{"text":"{big}"}}}},"id":11}}"#
    );
    child.write(format!("{line}\n").as_bytes()).await;
    let answer = child.receive().await;
    assert_eq!(error_of(&answer), (&Value::Null, -32600), "{answer}");

    // Just under the limit is served.
    let text = "word ".repeat(1000);
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 12, "method": "tools/call",
                       "params": { "name": "word_count", "arguments": { "text": text } } }))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], 12, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "1000");
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn raw_stdio_line_limit_is_configurable() {
    let mut child = RawChild::spawn(&["--max-line-bytes", "200"]);
    child.initialize().await;
    let request = |id: u32, text: &str| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "word_count", "arguments": { "text": text } } })
    };
    child.send(&request(1, &"a ".repeat(100))).await;
    let answer = child.receive().await;
    assert_eq!(error_of(&answer), (&json!(1), -32600), "{answer}");
    assert_eq!(answer["error"]["data"]["max_line_bytes"], 200);
    child.send(&request(2, "a b c")).await;
    assert_eq!(child.receive().await["result"]["content"][0]["text"], "3");
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn raw_stdio_answers_malformed_tools_call_params() {
    let mut child = RawChild::spawn(&[]);
    child.initialize().await;
    let cases = [
        (
            json!({ "jsonrpc": "2.0", "id": 20, "method": "tools/call" }),
            "params",
        ),
        (
            json!({ "jsonrpc": "2.0", "id": 24, "method": "tools/call", "params": ["lookup"] }),
            "params",
        ),
        (
            json!({ "jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": { "arguments": {} } }),
            "name",
        ),
        (
            json!({ "jsonrpc": "2.0", "id": 22, "method": "tools/call",
                    "params": { "name": "lookup", "arguments": [1] } }),
            "arguments",
        ),
    ];
    for (request, field) in cases {
        child.send(&request).await;
        let answer = child.receive().await;
        assert_eq!(error_of(&answer), (&request["id"], -32602), "{answer}");
        assert_eq!(answer["error"]["data"]["field"], field, "{answer}");
        assert!(
            answer["error"]["message"].as_str().unwrap().contains(field),
            "{answer}"
        );
    }
    // Another standard method with params rmcp cannot parse.
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 25, "method": "tools/list", "params": 5 }))
        .await;
    let answer = child.receive().await;
    assert_eq!(error_of(&answer), (&json!(25), -32602), "{answer}");
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 23, "method": "tools/call",
                       "params": { "name": "lookup", "arguments": { "sku": "MOUSE-1" } } }))
        .await;
    let answer = child.receive().await;
    assert_eq!(
        answer["result"]["structuredContent"]["stock"], 12,
        "{answer}"
    );
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn raw_stdio_tolerates_a_notification_before_initialize() {
    let mut child = RawChild::spawn(&[]);
    child
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    child.initialize().await;
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))
        .await;
    assert_eq!(
        child.receive().await,
        json!({ "jsonrpc": "2.0", "id": 1, "result": {} })
    );
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn raw_stdio_progress_only_for_a_token_and_never_after_the_result() {
    let mut child = RawChild::spawn(&[]);
    child.initialize().await;

    // With a token: every progress notification precedes the result.
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 30, "method": "tools/call",
                       "params": { "name": "slow", "arguments": { "steps": 3, "step_ms": 110 },
                                   "_meta": { "progressToken": "job-42" } } }))
        .await;
    let mut progress = Vec::new();
    let result = loop {
        let message = child.receive().await;
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "job-42", "{message}");
            progress.push(message["params"]["progress"].as_f64().unwrap());
        } else {
            break message;
        }
    };
    assert_eq!(result["id"], 30, "{result}");
    assert_eq!(progress, [1.0, 2.0, 3.0]);

    // Without one: the result alone.
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 31, "method": "tools/call",
                       "params": { "name": "slow", "arguments": { "steps": 2, "step_ms": 110 } } }))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], 31, "no progress without a token: {answer}");
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn raw_stdio_serves_the_2026_lifecycle() {
    let mut child = RawChild::spawn(&[]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" }
    });
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": meta } }))
        .await;
    let answer = child.receive().await;
    assert!(
        answer["result"]["supportedVersions"]
            .as_array()
            .is_some_and(|versions| versions.contains(&json!("2026-07-28"))),
        "{answer}"
    );
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": { "_meta": meta } }))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["result"]["ttlMs"], 60_000, "{answer}");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    child
        .send(&json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": { "_meta": meta, "name": "lookup", "arguments": { "sku": "MOUSE-1" } } }))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["stock"], 12,
        "{answer}"
    );
    assert!(child.finish().await.success());
}
