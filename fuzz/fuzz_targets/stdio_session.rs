//! Arbitrary bytes into a served MCP session (the stdio framing, `LineTransport`, over an
//! in-memory pipe). Properties: no panic, no hang, every line out is a JSON-RPC 2.0 message,
//! the server hangs up once its input ends, and the tool needing confirmation never runs. When
//! every line in is JSON, every answer names an id that some line carried, equal to it as a
//! JSON value (`7.0` is answered `7.0`, never `7`), and no id is answered more often than lines
//! carried it.
#![no_main]

use std::{sync::atomic::Ordering, time::Duration};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

thread_local! {
    static RT: tokio::runtime::Runtime = carmy_fuzz::tokio_runtime();
}

fuzz_target!(|data: &[u8]| {
    let fixture = carmy_fuzz::fixture();
    let output = RT.with(|rt| {
        rt.block_on(async {
            let (client, server) = tokio::io::duplex(1 << 16);
            let (read, write) = tokio::io::split(server);
            // A small line limit so the over-long path is reachable.
            let server = carmy_mcp::McpServer::new(fixture.runtime.clone()).max_line_bytes(4096);
            let serving = tokio::spawn(server.serve_io(read, write));
            let (mut client_read, mut client_write) = tokio::io::split(client);
            let input = data.to_vec();
            let writer = tokio::spawn(async move {
                let _ = client_write.write_all(&input).await;
                let _ = client_write.shutdown().await;
            });
            let mut output = Vec::new();
            tokio::time::timeout(
                Duration::from_secs(10),
                client_read.read_to_end(&mut output),
            )
            .await
            .expect("the server hangs up once its input ends")
            .expect("read the server's output");
            writer.await.expect("the writer task");
            // A failed `initialize` is an error return, not a panic.
            let _ = serving.await.expect("the server task does not panic");
            output
        })
    });
    let mut answers = Vec::new();
    for line in output
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
    {
        let message: Value = serde_json::from_slice(line).unwrap_or_else(|error| {
            panic!("the server wrote a line that is not JSON ({error}): {line:?}")
        });
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        if message.get("method").is_none() {
            answers.push(message);
        }
    }
    // The ids the lines in carried, when every line is JSON within the line limit (an
    // over-long line is answered with the first `id` of its head, which a parse of the whole
    // line may not see as its id).
    let ids: Option<Vec<Value>> = data
        .split(|byte| *byte == b'\n')
        .map(|line| line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line).trim_ascii())
        .filter(|line| !line.is_empty())
        .map(|line| {
            if line.len() > 4096 {
                return None;
            }
            let value: Value = serde_json::from_slice(line).ok()?;
            Some(value.get("id").cloned().unwrap_or(Value::Null))
        })
        .collect();
    if let Some(ids) = ids {
        for answer in &answers {
            let id = answer.get("id").unwrap_or(&Value::Null);
            if id.is_null() {
                continue;
            }
            let carried = ids.iter().filter(|sent| *sent == id).count();
            let answered = answers.iter().filter(|other| other.get("id") == Some(id)).count();
            assert!(carried > 0, "an answer to an id no line carried: {answer}");
            assert!(answered <= carried, "id {id} answered {answered} times, sent {carried}");
        }
    }
    assert_eq!(
        fixture.purged.load(Ordering::SeqCst),
        0,
        "a tool needing confirmation ran without a grant"
    );
});
