//! The README's binary, built as written, serving one MCP client on stdio: a session opened, the
//! tool listed with the schema of its input, and a call answered by the tool's own code.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
};

use serde_json::{Value, json};

#[test]
fn minimal_serves_its_tool_over_stdio() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_minimal"))
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the minimal binary starts");
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut send = move |message: Value| {
        let mut line = serde_json::to_vec(&message).expect("JSON");
        line.push(b'\n');
        stdin.write_all(&line).expect("write");
        stdin.flush().expect("flush");
    };
    let mut receive = || {
        let mut line = String::new();
        assert_ne!(
            stdout.read_line(&mut line).expect("read"),
            0,
            "the server hung up"
        );
        serde_json::from_str::<Value>(&line).expect("a JSON-RPC line")
    };

    send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "minimal-test", "version": "1" }
        }
    }));
    let initialized = receive();
    assert_eq!(initialized["id"], 1);
    assert_eq!(initialized["result"]["serverInfo"]["name"], "minimal");
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));

    send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }));
    let listed = receive();
    assert_eq!(listed["id"], 2);
    let tools = listed["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 1, "{listed}");
    assert_eq!(tools[0]["name"], "greet");
    assert_eq!(tools[0]["description"], "Greet someone by name.");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["name"]));
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);

    send(json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "greet", "arguments": { "name": "Ada" } }
    }));
    let called = receive();
    assert_eq!(called["id"], 3);
    assert_eq!(called["result"]["isError"], false, "{called}");
    // The output, a `String`, travels as its JSON text.
    assert_eq!(
        called["result"]["content"][0]["text"], r#""Hello, Ada!""#,
        "{called}"
    );
    assert_eq!(called["result"]["_meta"]["carmy/status"], "succeeded");

    drop(send);
    let status = child.wait().expect("the server exits");
    assert!(status.success(), "{status}");
}
