//! Tools that misbehave, driven over the real stdio of the testbed binary (`--faulty-tools`),
//! as a client would meet them: a panic, an output that breaks its own schema, a deadline
//! overrun, two slow writes whose executions are counted, and the retry of a write that was
//! interrupted. `hostile.rs` covers the same outcomes in process; here they cross the real
//! process, framing and transport.

use crate::common;

use std::time::{Duration, Instant};

use carmy_mcp::{META_ERROR, META_REQUEST_ID, META_STATUS};
use common::RawChild;
use serde_json::{Value, json};

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": name, "arguments": arguments } })
}

fn call_with_request_id(id: u64, name: &str, arguments: Value, request_id: &str) -> Value {
    let mut message = call(id, name, arguments);
    message["params"]["_meta"] = json!({ META_REQUEST_ID: request_id });
    message
}

/// (status, error code) of a tool's answer.
fn outcome(answer: &Value) -> (&str, &str) {
    let meta = &answer["result"]["_meta"];
    (
        meta[META_STATUS].as_str().unwrap_or_default(),
        meta[META_ERROR]["code"].as_str().unwrap_or_default(),
    )
}

async fn assert_serving(child: &mut RawChild, id: u64) {
    child
        .send(&call(id, "lookup", json!({ "sku": "MOUSE-1" })))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["stock"], 12,
        "{answer}"
    );
}

#[tokio::test]
async fn a_panic_a_broken_output_and_an_overrun_are_answered_and_the_process_serves_on() {
    let mut child = RawChild::spawn(&["--faulty-tools"]);
    child.initialize().await;
    for (id, tool, status, code) in [
        (1, "panics", "panicked", "TOOL_PANIC"),
        (2, "lies", "failed", "INVALID_OUTPUT"),
        (3, "overruns", "timed_out", "TIMEOUT"),
    ] {
        let started = Instant::now();
        child.send(&call(id, tool, json!({}))).await;
        let answer = child.receive().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert_eq!(outcome(&answer), (status, code), "{tool}: {answer}");
        // Never `structuredContent` on an error, even for a tool with an output schema.
        assert!(
            answer["result"].get("structuredContent").is_none(),
            "{answer}"
        );
        if tool == "overruns" {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the deadline held"
            );
        }
        assert_serving(&mut child, 100 + id).await;
    }
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn executions_of_one_write_tool_never_overlap_over_stdio() {
    const EACH: u64 = 4;
    const MS: u64 = 150;
    let mut child = RawChild::spawn(&["--faulty-tools"]);
    child.initialize().await;
    let started = Instant::now();
    // All at once, the two tools interleaved.
    for n in 0..EACH {
        for (offset, tool) in [(0, "transfer"), (100, "restock")] {
            child
                .send(&call(offset + n, tool, json!({ "amount": n, "ms": MS })))
                .await;
        }
    }
    let mut writes_at_once = 0;
    for _ in 0..2 * EACH {
        let answer = child.receive().await;
        let written = &answer["result"]["structuredContent"];
        assert_eq!(written["same_tool_at_once"], 1, "{answer}");
        writes_at_once = writes_at_once.max(written["writes_at_once"].as_u64().expect("a count"));
    }
    let elapsed = started.elapsed();
    // One tool's executions run one after the other.
    assert!(
        elapsed >= Duration::from_millis(EACH * MS),
        "{EACH} writes of {MS} ms each took {elapsed:?}"
    );
    // Serialization is per tool (`ToolSpec::parallel_safe`): the two tools' executions may
    // overlap each other. Printed, not asserted: it is the runtime's decision.
    eprintln!(
        "{} writes in {elapsed:?}; at most {writes_at_once} writes of the two tools at once",
        2 * EACH
    );
    assert!(child.finish().await.success());
}

#[tokio::test]
async fn a_retry_of_an_interrupted_write_is_execution_uncertain_over_stdio() {
    let mut child = RawChild::spawn(&["--faulty-tools"]);
    child.initialize().await;
    let arguments = json!({ "amount": 5, "ms": 30_000 });
    child
        .send(&call_with_request_id(
            1,
            "transfer",
            arguments.clone(),
            "t-1",
        ))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    child
        .send(
            &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": { "requestId": 1, "reason": "the user gave up" } }),
        )
        .await;
    // The retry, at once and under the same JSON-RPC id: the write may have happened, so it is
    // not run again, and the answer says so.
    let started = Instant::now();
    child
        .send(&call_with_request_id(1, "transfer", arguments, "t-1"))
        .await;
    let answer = child.receive().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["_meta"][META_ERROR]["code"], "EXECUTION_UNCERTAIN",
        "{answer}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_serving(&mut child, 2).await;
    assert!(child.finish().await.success());
}
