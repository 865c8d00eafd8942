//! The `shop` binary's command line, run as a user runs it: `Cli::main` picks the tokio runtime
//! per subcommand, so each kind of subcommand is started here as a process.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Output, Stdio},
};

use serde_json::{Value, json};

fn shop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shop"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("the shop binary starts")
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not JSON ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn call_runs_a_tool_in_process() {
    let output = shop(&["call", "search_products", r#"{"query": "MOUSE"}"#]);
    assert!(output.status.success(), "{output:?}");
    let outcome = stdout_json(&output);
    assert_eq!(outcome["status"], "succeeded", "{outcome:#}");
    assert_eq!(outcome["output"]["total"], 4, "{outcome:#}");
}

#[test]
fn a_refused_call_and_bad_usage_have_their_exit_codes() {
    let refused = shop(&["call", "cancel_order", r#"{"order_id": "ord-1001"}"#]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert_eq!(
        stdout_json(&refused)["error"]["code"],
        "CONFIRMATION_REQUIRED"
    );
    assert_eq!(shop(&["serve-everything"]).status.code(), Some(2));
    assert_eq!(
        shop(&["call", "search_products", "{"]).status.code(),
        Some(2)
    );
    assert_eq!(shop(&["--help"]).status.code(), Some(0));
}

#[test]
fn tools_lists_the_catalog() {
    let output = shop(&["tools", "--json"]);
    assert!(output.status.success(), "{output:?}");
    let listing = stdout_json(&output);
    let text = listing.to_string();
    for tool in ["search_products", "place_order", "cancel_order"] {
        assert!(text.contains(tool), "{tool} missing from {listing:#}");
    }
}

#[test]
fn mcp_serves_stdio_until_the_client_hangs_up() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shop"))
        .arg("mcp")
        // Not the default file: tests run in parallel and again.
        .env("CARMY_STORE", "memory")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the shop binary starts");
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").expect("the server reads");
    };
    let mut receive = || {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the server writes");
        serde_json::from_str::<Value>(&line).expect("a JSON line")
    };
    send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "cli-test", "version": "1" }
        }
    }));
    assert_eq!(receive()["result"]["serverInfo"]["name"], "shop");
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    // Several calls in flight at once on the one thread, answered by id.
    for id in 2..6 {
        send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "search_products", "arguments": { "query": "mouse" } }
        }));
    }
    let mut ids = Vec::new();
    for _ in 2..6 {
        let answer = receive();
        assert_eq!(
            answer["result"]["structuredContent"]["total"], 4,
            "{answer}"
        );
        ids.push(answer["id"].as_i64().expect("an id"));
    }
    ids.sort_unstable();
    assert_eq!(ids, [2, 3, 4, 5]);
    drop(stdin);
    let status = child.wait().expect("the server exits");
    assert!(status.success(), "{status:?}");
}
