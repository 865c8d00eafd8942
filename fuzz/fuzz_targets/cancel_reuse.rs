//! Sequences of calls, cancellations and stray answers under ids that differ only in how they
//! are written (`1`, `1.0`, `"1"`...), into a session served by `LineTransport` with room for
//! two requests in flight, so that requests wait and cancels race with calls, their answers and
//! reused ids.
//!
//! Each input is a list of two-byte steps `[op, arg]`: `op % 4` is a call of the `wait` tool
//! (up to 15 ms, with a nonce its answer echoes), a cancel, a stray answer (to no request of
//! the server's) or a pause; `op / 4 % 8` picks the id's spelling. Properties, once the input
//! ends and the server has hung up:
//! - every answer names a request the client sent, by an id equal to it as a JSON value, and
//!   a call's answer carries that call's nonce;
//! - no id is answered more often than it was sent;
//! - a cancelled request is never answered as cancelled (its answer is dropped);
//! - every call that no cancel named (exactly) before its id was sent again is answered: by its
//!   own result, or by the refusal of a duplicate id.
#![no_main]

use std::{collections::HashMap, time::Duration};

use libfuzzer_sys::fuzz_target;
use carmy_mcp::rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

thread_local! {
    static RT: tokio::runtime::Runtime = carmy_fuzz::tokio_runtime();
}

/// The spellings of ids: some equal as JSON values, some only alike.
const IDS: [&str; 8] = ["1", "1.0", "\"1\"", "2", "2e0", "20e-1", "\"a\"", "-0"];

enum Step {
    Call { id: usize, ms: u8, nonce: u32 },
    Cancel { id: usize },
    Stray { id: usize },
    Pause { ms: u8 },
}

fn steps(data: &[u8]) -> Vec<Step> {
    data.chunks_exact(2)
        .take(48)
        .enumerate()
        .map(|(n, step)| {
            let (op, arg) = (step[0], step[1]);
            let id = usize::from(op / 4) % IDS.len();
            match op % 4 {
                0 => Step::Call {
                    id,
                    ms: arg % 16,
                    nonce: n as u32,
                },
                1 => Step::Cancel { id },
                2 => Step::Stray { id },
                _ => Step::Pause { ms: arg % 8 },
            }
        })
        .collect()
}

fn line(step: &Step) -> Option<String> {
    Some(match step {
        Step::Call { id, ms, nonce } => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/call\",\"params\":{{\"name\":\"wait\",\"arguments\":{{\"ms\":{ms},\"nonce\":{nonce}}}}}}}\n",
            IDS[*id]
        ),
        Step::Cancel { id } => format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{}}}}}\n",
            IDS[*id]
        ),
        Step::Stray { id } => format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{}}}}\n", IDS[*id]),
        Step::Pause { .. } => return None,
    })
}

fn value(id: usize) -> Value {
    serde_json::from_str(IDS[id]).expect("a JSON id")
}

fuzz_target!(|data: &[u8]| {
    let steps = steps(data);
    if steps.is_empty() {
        return;
    }
    let fixture = carmy_fuzz::fixture();
    let output = RT.with(|rt| {
        rt.block_on(async {
            let (client, server) = tokio::io::duplex(1 << 16);
            let (read, write) = tokio::io::split(server);
            let transport = carmy_mcp::LineTransport::new(read, write).max_in_flight(2);
            let server = carmy_mcp::McpServer::new(fixture.runtime.clone());
            let serving = tokio::spawn(async move {
                if let Ok(running) = server.serve(transport).await {
                    let _ = running.waiting().await;
                }
            });
            let (mut client_read, mut client_write) = tokio::io::split(client);
            let mut script = vec![String::from(
                "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"f\",\"version\":\"0\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
            )];
            let mut pauses = vec![0u8];
            for step in &steps {
                match (line(step), step) {
                    (Some(line), _) => {
                        script.push(line);
                        pauses.push(0);
                    }
                    (None, Step::Pause { ms }) => {
                        if let Some(last) = pauses.last_mut() {
                            *last = last.saturating_add(*ms);
                        }
                    }
                    (None, _) => unreachable!("only pauses have no line"),
                }
            }
            let writer = tokio::spawn(async move {
                for (line, pause) in script.iter().zip(pauses) {
                    if client_write.write_all(line.as_bytes()).await.is_err() {
                        break;
                    }
                    if pause > 0 {
                        tokio::time::sleep(Duration::from_millis(u64::from(pause))).await;
                    }
                }
                let _ = client_write.shutdown().await;
            });
            let mut output = Vec::new();
            tokio::time::timeout(Duration::from_secs(10), client_read.read_to_end(&mut output))
                .await
                .expect("the server hangs up once its input ends")
                .expect("read the server's output");
            writer.await.expect("the writer task");
            serving.await.expect("the server task does not panic");
            output
        })
    });

    let answers: Vec<Value> = output
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).expect("the server writes JSON"))
        .filter(|message: &Value| message.get("method").is_none())
        .collect();
    let mut answered: HashMap<String, usize> = HashMap::new();
    let mut results: HashMap<String, Vec<u64>> = HashMap::new();
    let mut refused: HashMap<String, usize> = HashMap::new();
    for answer in &answers {
        let id = &answer["id"];
        if *id == json!("init") {
            continue;
        }
        // A key per JSON value (serde_json's equality: `1` is not `1.0`, `2.0` is `2e0`).
        let key = IDS
            .iter()
            .position(|spelling| serde_json::from_str::<Value>(spelling).unwrap() == *id)
            .map(|at| canonical(at))
            .unwrap_or_else(|| panic!("an answer to no id the client sent: {answer}"));
        *answered.entry(key.clone()).or_default() += 1;
        if let Some(nonce) = answer["result"]["structuredContent"]["nonce"].as_u64() {
            let sent = steps.iter().any(|step| {
                matches!(step, Step::Call { id: called, nonce: n, .. }
                    if u64::from(*n) == nonce && value(*called) == *id)
            });
            assert!(sent, "the answer carries the nonce of another call: {answer}");
            results.entry(key).or_default().push(nonce);
        } else if answer["error"]["code"] == -32600 {
            *refused.entry(key).or_default() += 1;
        } else {
            assert_ne!(
                answer["result"]["_meta"]["carmy/status"], "cancelled",
                "a cancelled call was answered: {answer}"
            );
        }
    }
    // Per id (as a JSON value): calls sent, and calls no exact cancel named before the id came
    // again.
    let mut sent: HashMap<String, usize> = HashMap::new();
    let mut standing: HashMap<String, Vec<u32>> = HashMap::new();
    for (at, step) in steps.iter().enumerate() {
        let Step::Call { id, nonce, .. } = step else {
            continue;
        };
        let key = canonical(*id);
        *sent.entry(key.clone()).or_default() += 1;
        let cancelled = steps[at + 1..]
            .iter()
            .take_while(|later| !matches!(later, Step::Call { id: again, .. } if canonical(*again) == key))
            .any(|later| matches!(later, Step::Cancel { id: named } if canonical(*named) == key));
        if !cancelled {
            standing.entry(key).or_default().push(*nonce);
        }
    }
    for (key, count) in &answered {
        assert!(
            *count <= sent.get(key).copied().unwrap_or(0),
            "id {key} answered {count} times, sent fewer"
        );
    }
    for (key, nonces) in &standing {
        let own = nonces
            .iter()
            .filter(|nonce| results.get(key).is_some_and(|r| r.contains(&u64::from(**nonce))))
            .count();
        let refusals = refused.get(key).copied().unwrap_or(0);
        assert!(
            own + refusals >= nonces.len(),
            "id {key}: calls {nonces:?} stood, {own} answered and {refusals} refused"
        );
    }
});

/// The first spelling of the JSON value `IDS[at]` is, as its key.
fn canonical(at: usize) -> String {
    let target = value(at);
    let first = IDS
        .iter()
        .position(|spelling| serde_json::from_str::<Value>(spelling).unwrap() == target)
        .expect("itself");
    IDS[first].to_owned()
}
