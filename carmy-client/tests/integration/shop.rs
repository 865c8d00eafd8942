//! `carmy client` against the shop, over each transport and on both lifecycles, as a user runs
//! it: a real `carmy` process talking to a real `shop` process.

use crate::common;

use std::{
    io::BufReader,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use common::{
    CARMY, Served, TempDir, Watchdog, carmy, finish, interrupt, stdio_server, wait_for_line,
};
use serde_json::Value;

const PROTOCOLS: [&str; 2] = ["2025-11-25", "2026-07-28"];
const TOKEN: &str = "carmy-cli-test-token-0123456789";

/// `carmy client <transport…> --protocol <protocol> <command…>`.
fn client(transport: &[&str], protocol: &str, command: &[&str]) -> common::Run {
    let mut args = vec!["client"];
    args.extend_from_slice(transport);
    args.extend_from_slice(&["--protocol", protocol]);
    args.extend_from_slice(command);
    carmy(&args)
}

/// Every command, on one transport, on both lifecycles.
fn every_command(transport: &[&str]) {
    every_command_on(transport, &PROTOCOLS);
}

/// Every command, on one transport, on each of `protocols`.
fn every_command_on(transport: &[&str], protocols: &[&str]) {
    for &protocol in protocols {
        let run = |command: &[&str]| client(transport, protocol, command);
        let context = format!("{transport:?} {protocol}");

        let tools = run(&["list-tools"]).ok();
        assert!(tools.stdout.starts_with("TOOL "), "{context}: {tools:#?}");
        assert!(
            tools.stdout.contains("search_products"),
            "{context}: {tools:#?}"
        );

        let found = run(&[
            "call-tool",
            "-n",
            "search_products",
            "-a",
            r#"{"query": "mouse"}"#,
        ])
        .ok();
        let found: Value = serde_json::from_str(&found.stdout).expect("the text is JSON");
        assert_eq!(found["total"], 4, "{context}: {found:#}");

        let resources = run(&["list-resources"]).ok();
        assert!(
            resources.stdout.contains("shop://catalog"),
            "{context}: {resources:#?}"
        );

        let templates = run(&["list-templates"]).ok();
        assert!(
            templates.stdout.contains("shop://products/{id}"),
            "{context}: {templates:#?}"
        );

        let catalog = run(&["read-resource", "-u", "shop://products/sku-001"]).ok();
        assert!(
            catalog.stdout.contains("\"id\": \"sku-001\""),
            "{context}: {catalog:#?}"
        );

        let prompts = run(&["list-prompts"]).ok();
        assert!(
            prompts.stdout.contains("order_help  order_id [issue]"),
            "{context}: {prompts:#?}"
        );

        let completed = run(&[
            "complete",
            "-r",
            "shop://products/{id}",
            "--arg",
            "id",
            "--value",
            "sku-00",
        ])
        .ok();
        assert!(
            completed.stdout.lines().any(|line| line == "sku-001"),
            "{context}: {completed:#?}"
        );

        let pong = run(&["ping"]).ok();
        assert!(
            pong.stdout.starts_with("the server answered"),
            "{context}: {pong:#?}"
        );
    }
}

#[test]
fn every_command_over_stdio() {
    every_command(&["-s", &stdio_server("")]);
}

#[test]
fn every_command_over_http() {
    let shop = Served::http(TOKEN);
    every_command(&["-t", "http", "-s", &shop.server, "--bearer", TOKEN]);
}

#[test]
fn every_command_over_the_legacy_sse_transport() {
    let shop = Served::http_with(TOKEN, &["--legacy-sse"]);
    let url = shop.server.replace("/mcp", "/sse");
    // The transport predates 2026-07-28: `initialize` only.
    every_command_on(
        &["-t", "sse", "-s", &url, "--bearer", TOKEN],
        &["2025-11-25"],
    );
    // Without `--protocol` too; and a call's progress and answer arrive on the stream.
    let found = carmy(&[
        "client",
        "-t",
        "sse",
        "-s",
        &url,
        "--bearer",
        TOKEN,
        "call-tool",
        "-n",
        "search_products",
        "-a",
        r#"{"query": "mouse"}"#,
    ])
    .ok();
    assert!(found.stdout.contains("\"total\": 4"), "{found:#?}");
}

#[test]
fn every_command_over_a_unix_socket() {
    let shop = Served::unix();
    every_command(&["-t", "unix", "-s", &shop.server]);
}

#[test]
fn without_protocol_the_newest_lifecycle_is_negotiated() {
    // `ping` says what it sent: `server/discover` exists only on 2026-07-28.
    let pong = carmy(&["client", "-s", &stdio_server(""), "ping"]).ok();
    assert!(pong.stdout.contains("server/discover"), "{pong:#?}");
    let pong = carmy(&[
        "client",
        "-s",
        &stdio_server(""),
        "--protocol",
        "2025-11-25",
        "ping",
    ])
    .ok();
    assert!(pong.stdout.contains("answered ping"), "{pong:#?}");
}

#[test]
fn set_log_level_is_answered_on_2025_11_25() {
    let shop = Served::unix();
    for transport in [
        vec!["-s".to_owned(), stdio_server("")],
        vec!["-t".into(), "unix".into(), "-s".into(), shop.server.clone()],
    ] {
        let mut args = vec!["client"];
        args.extend(transport.iter().map(String::as_str));
        args.extend(["--protocol", "2025-11-25", "set-log-level", "-l", "info"]);
        let set = carmy(&args).ok();
        assert_eq!(set.stdout, "log level set to info\n");
    }
}

#[test]
fn json_output_is_the_result_as_sent() {
    for protocol in PROTOCOLS {
        let server = stdio_server("");
        let listed = carmy(&[
            "client",
            "-s",
            &server,
            "--protocol",
            protocol,
            "--json",
            "list-tools",
        ])
        .ok();
        let listed = listed.json();
        let names: Vec<&str> = listed["tools"]
            .as_array()
            .expect("a list")
            .iter()
            .filter_map(|tool| tool["name"].as_str())
            .collect();
        assert!(names.contains(&"sales_report"), "{names:?}");

        let called = carmy(&[
            "client",
            "-s",
            &server,
            "--protocol",
            protocol,
            "call-tool",
            "--json",
            "-n",
            "search_products",
            "-a",
            r#"{"query": "mouse"}"#,
        ])
        .ok();
        let called = called.json();
        assert_eq!(called["structuredContent"]["total"], 4, "{called:#}");
        assert_eq!(called["content"][0]["type"], "text", "{called:#}");

        let read = carmy(&[
            "client",
            "-s",
            &server,
            "--protocol",
            protocol,
            "--json",
            "read-resource",
            "-u",
            "shop://catalog",
        ])
        .ok();
        assert_eq!(read.json()["contents"][0]["uri"], "shop://catalog");
    }
}

#[test]
fn a_tool_error_exits_1_with_the_result_printed() {
    for protocol in PROTOCOLS {
        let refused = carmy(&[
            "client",
            "-s",
            &stdio_server(""),
            "--protocol",
            protocol,
            "call-tool",
            "-n",
            "cancel_order",
            "-a",
            r#"{"order_id": "ord-1001"}"#,
        ]);
        assert_eq!(refused.code(), Some(1), "{refused:#?}");
        assert!(
            refused.stdout.contains("CONFIRMATION_REQUIRED"),
            "{refused:#?}"
        );
        assert!(refused.stderr.contains("reported an error"), "{refused:#?}");
    }
}

#[test]
fn a_json_rpc_error_exits_1_with_its_code_and_data() {
    let missing = carmy(&[
        "client",
        "-s",
        &stdio_server(""),
        "get-prompt",
        "-n",
        "order_help",
        "-a",
        r#"{"order_id": "ord-404"}"#,
    ]);
    assert_eq!(missing.code(), Some(1), "{missing:#?}");
    assert!(
        missing.stderr.contains("the server answered -32"),
        "{missing:#?}"
    );
    assert!(missing.stderr.contains("ORDER_NOT_FOUND"), "{missing:#?}");
    let unknown = carmy(&[
        "client",
        "-s",
        &stdio_server(""),
        "read-resource",
        "-u",
        "shop://nothing",
    ]);
    assert_eq!(unknown.code(), Some(1), "{unknown:#?}");
}

#[test]
fn bad_usage_exits_2() {
    let server = stdio_server("");
    for args in [
        vec!["client", "list-tools"],
        vec![
            "client",
            "-s",
            &server,
            "call-tool",
            "-n",
            "search_products",
            "-a",
            "{",
        ],
        vec![
            "client",
            "-s",
            &server,
            "call-tool",
            "-n",
            "search_products",
            "-a",
            "[1]",
        ],
        vec![
            "client",
            "-s",
            &server,
            "get-prompt",
            "-n",
            "order_help",
            "-a",
            r#"{"order_id": 1}"#,
        ],
        vec!["client", "-s", &server, "--header", "X-A: b", "list-tools"],
        vec![
            "client",
            "-s",
            &server,
            "--protocol",
            "2024-01-01",
            "list-tools",
        ],
        vec!["client", "-s", &server, "--timeout", "0", "list-tools"],
        vec!["client", "-s", &server, "complete", "--arg", "id"],
        vec!["client", "-s", "", "list-tools"],
        vec![
            "client",
            "-t",
            "sse",
            "-s",
            "http://127.0.0.1:1/sse",
            "--protocol",
            "2026-07-28",
            "list-tools",
        ],
        vec!["client", "-t", "sse", "-s", "127.0.0.1:1/sse", "list-tools"],
        vec!["client", "-s", &server, "frobnicate"],
        // TLS is not built in: https:// is refused up front rather than failing to connect.
        vec![
            "client",
            "-t",
            "http",
            "-s",
            "https://127.0.0.1:1/mcp",
            "list-tools",
        ],
        vec!["client", "-t", "http", "-s", "127.0.0.1:1", "list-tools"],
    ] {
        let run = carmy(&args);
        assert_eq!(run.code(), Some(2), "{args:?}: {run:#?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:#?}");
        assert!(run.stderr.contains("error"), "{args:?}: {run:#?}");
    }
}

#[test]
fn an_unreachable_server_exits_3() {
    let dir = TempDir::new("unreachable");
    let socket = dir.0.join("nobody.sock");
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let sse_url = format!("http://127.0.0.1:{port}/sse");
    let shop = Served::http_with(TOKEN, &["--legacy-sse"]);
    let shop_sse = shop.server.replace("/mcp", "/sse");
    for args in [
        vec!["client", "-s", "/nonexistent/server --flag", "list-tools"],
        // A program that exits at once: it never initializes.
        vec!["client", "-s", "true", "list-tools"],
        vec![
            "client",
            "-t",
            "unix",
            "-s",
            socket.to_str().expect("UTF-8"),
            "list-tools",
        ],
        vec!["client", "-t", "http", "-s", &url, "list-tools"],
        vec!["client", "-t", "sse", "-s", &sse_url, "list-tools"],
        // Reached, but refused: no bearer token, and a wrong one.
        vec!["client", "-t", "sse", "-s", &shop_sse, "list-tools"],
        vec![
            "client",
            "-t",
            "sse",
            "-s",
            &shop_sse,
            "--bearer",
            "wrong-token-0123456789",
            "list-tools",
        ],
        // Not the legacy transport's URL: no event stream there.
        vec![
            "client",
            "-t",
            "sse",
            "-s",
            &shop.server,
            "--bearer",
            TOKEN,
            "list-tools",
        ],
        vec!["client", "-t", "http", "-s", &shop.server, "list-tools"],
        vec![
            "client",
            "-t",
            "http",
            "-s",
            &shop.server,
            "--bearer",
            "wrong-token-0123456789",
            "list-tools",
        ],
    ] {
        let run = carmy(&args);
        assert_eq!(run.code(), Some(3), "{args:?}: {run:#?}");
        assert!(!run.stderr.contains("panicked"), "{args:?}: {run:#?}");
    }
    // A server that never answers: `--timeout` gives up on it (4, not 3).
    let started = Instant::now();
    let silent = carmy(&[
        "client",
        "-s",
        "sleep 30",
        "--protocol",
        "2025-11-25",
        "--timeout",
        "1",
        "list-tools",
    ]);
    assert_eq!(silent.code(), Some(4), "{silent:#?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{silent:#?}");
}

#[test]
fn a_request_id_replays_the_first_execution() {
    let order = r#"{"lines": [{"product_id": "sku-001", "quantity": 1}],
        "ship_to": {"name": "Ada", "street": "1 Rue", "city": "Paris", "postal_code": "75001", "country": "FR"}}"#;
    for (transport, shop) in [("http", Served::http(TOKEN)), ("unix", Served::unix())] {
        for protocol in PROTOCOLS {
            let place = |request_id: &str| {
                let mut args = vec!["client", "-t", transport, "-s", &shop.server];
                if transport == "http" {
                    args.extend(["--bearer", TOKEN]);
                }
                args.extend([
                    "--protocol",
                    protocol,
                    "--json",
                    "call-tool",
                    "-n",
                    "place_order",
                    "-a",
                    order,
                    "--request-id",
                    request_id,
                ]);
                let placed = carmy(&args).ok().json();
                (
                    placed["_meta"]["carmy/execution_id"]
                        .as_str()
                        .expect("an execution id")
                        .to_owned(),
                    placed["structuredContent"]["order_id"]
                        .as_str()
                        .expect("an order id")
                        .to_owned(),
                )
            };
            let key = format!("order-{transport}-{protocol}");
            let first = place(&key);
            let again = place(&key);
            assert_eq!(first, again, "{transport} {protocol}: the retry ran again");
            let other = place(&format!("{key}-other"));
            assert_ne!(
                first.0, other.0,
                "{transport} {protocol}: a new key replayed"
            );
            assert_ne!(
                first.1, other.1,
                "{transport} {protocol}: a new key replayed"
            );
        }
    }
}

#[test]
fn progress_and_log_messages_go_to_stderr() {
    for protocol in PROTOCOLS {
        let report = carmy(&[
            "client",
            "-s",
            &stdio_server(""),
            "--protocol",
            protocol,
            "call-tool",
            "-n",
            "sales_report",
            "-a",
            r#"{"seconds": 1}"#,
            "--log-level",
            "info",
        ])
        .ok();
        assert!(
            report.stderr.contains("progress: 1/10 crunching orders"),
            "{protocol}: {report:#?}"
        );
        assert!(
            report.stderr.contains("progress: 10/10 crunching orders"),
            "{protocol}: {report:#?}"
        );
        assert!(
            report.stderr.contains("[info] shop::reports:"),
            "{protocol}: {report:#?}"
        );
        assert!(
            report.stderr.contains("sales report computed"),
            "{protocol}: {report:#?}"
        );
        // Only the result on stdout.
        let result: Value = serde_json::from_str(&report.stdout).expect("the report");
        assert_eq!(result["orders"], 0);
    }
}

#[test]
fn ctrl_c_cancels_the_call_on_the_server_and_exits_130() {
    for protocol in PROTOCOLS {
        // The shop over stdio writes its debug log to carmy's stderr (inherited).
        let server = format!("RUST_LOG=carmy_mcp=debug {}", stdio_server(""));
        let mut child = Command::new(CARMY)
            .env("CARMY_STORE", "memory")
            .args([
                "client",
                "-s",
                &server,
                "--protocol",
                protocol,
                "call-tool",
                "-n",
                "sales_report",
                "-a",
                r#"{"seconds": 30}"#,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("carmy starts");
        let _watchdog = Watchdog::new(child.id());
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let mut seen = wait_for_line(&mut stderr, "progress: 3/300");
        let started = Instant::now();
        interrupt(child.id());
        seen.push_str(&wait_for_line(
            &mut stderr,
            "the client cancelled a request",
        ));
        // The reader may hold more than that line (carmy's own last word often comes in the same
        // read): it was printed too, and `into_inner` would drop it.
        seen.push_str(&String::from_utf8_lossy(stderr.buffer()));
        child.stderr = Some(stderr.into_inner());
        let run = finish(child);
        assert_eq!(run.code(), Some(130), "{protocol}: {run:#?}\n{seen}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{protocol}: {run:#?}"
        );
        assert!(
            seen.contains("interrupted by the user (Ctrl-C)"),
            "{protocol}: {seen}"
        );
        // carmy's own last word; the server writes to the same stderr from its own process,
        // so which of the two lines comes first is not for either to say (carmy waits 2 s at
        // most for the server to exit, and a loaded machine can take longer).
        assert!(
            seen.contains("error: interrupted") || run.stderr.contains("error: interrupted"),
            "{protocol}: {run:#?}\n{seen}"
        );
        assert!(run.stdout.is_empty(), "{protocol}: {run:#?}");
    }
}

#[test]
fn a_call_that_reports_progress_outlasts_its_timeout() {
    // `sales_report` reports progress ten times a second: the server is never silent for the
    // 2 s of `--timeout`, however long the report takes. (A silent call past it is cancelled:
    // tests/hostile.rs.)
    for protocol in PROTOCOLS {
        let report = carmy(&[
            "client",
            "-s",
            &stdio_server(""),
            "--protocol",
            protocol,
            "--timeout",
            "2",
            "call-tool",
            "-n",
            "sales_report",
            "-a",
            r#"{"seconds": 4}"#,
        ]);
        assert_eq!(report.code(), Some(0), "{protocol}: {report:#?}");
        assert!(
            report.stderr.contains("progress: 40/40"),
            "{protocol}: {report:#?}"
        );
        let result: Value = serde_json::from_str(&report.stdout).expect("the report");
        assert_eq!(result["orders"], 0, "{protocol}");
    }
}

/// `carmy client <transport…> subscribe` to a file the test edits twice: each edit is one
/// `updated URI` line, and Ctrl-C ends it with 130.
fn subscribe_sees_edits(transport: &[&str], protocol: &str, dir: &std::path::Path) {
    let file = dir.join("notes.md");
    std::fs::write(&file, "first\n").expect("a file");
    let uri = format!("file://{}", file.display());
    let mut args = vec!["client"];
    args.extend_from_slice(transport);
    args.extend(["--protocol", protocol, "subscribe", "-u", &uri]);
    let mut child = Command::new(CARMY)
        .env("CARMY_STORE", "memory")
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("carmy starts");
    let _watchdog = Watchdog::new(child.id());
    let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    wait_for_line(&mut stderr, "subscribed to");
    for edit in ["second\n", "third\n"] {
        std::fs::write(&file, edit).expect("an edit");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut line).expect("stdout");
        assert_eq!(line, format!("updated {uri}\n"), "{transport:?} {protocol}");
    }
    interrupt(child.id());
    child.stderr = Some(stderr.into_inner());
    child.stdout = Some(stdout.into_inner());
    let run = finish(child);
    assert_eq!(run.code(), Some(130), "{transport:?} {protocol}: {run:#?}");
}

#[test]
fn subscribe_prints_each_update_until_ctrl_c() {
    for protocol in PROTOCOLS {
        let dir = TempDir::new("subscribe");
        let root = dir.0.display().to_string();
        subscribe_sees_edits(
            &["-s", &stdio_server(&format!("--resource-root {root}"))],
            protocol,
            &dir.0,
        );
        let shop = Served::unix_with(&["--resource-root", &root]);
        subscribe_sees_edits(&["-t", "unix", "-s", &shop.server], protocol, &dir.0);
        let shop = Served::http_with(TOKEN, &["--resource-root", &root]);
        subscribe_sees_edits(
            &["-t", "http", "-s", &shop.server, "--bearer", TOKEN],
            protocol,
            &dir.0,
        );
    }
}

#[test]
fn questions_are_declined_without_a_terminal() {
    for protocol in PROTOCOLS {
        let declined = carmy(&[
            "client",
            "-s",
            &stdio_server("--confirm-via-client"),
            "--protocol",
            protocol,
            "call-tool",
            "-n",
            "cancel_order",
            "-a",
            r#"{"order_id": "ord-1001"}"#,
        ]);
        assert_eq!(declined.code(), Some(1), "{protocol}: {declined:#?}");
        assert!(
            declined
                .stderr
                .contains("the server asks: Allow `cancel_order`"),
            "{protocol}: {declined:#?}"
        );
        assert!(
            declined.stderr.contains("declined: no terminal"),
            "{protocol}: {declined:#?}"
        );
        assert!(
            declined.stdout.contains("CONFIRMATION_DECLINED"),
            "{protocol}: {declined:#?}"
        );
    }
}

#[test]
fn output_saves_a_resource_to_a_file() {
    let dir = TempDir::new("output");
    let saved = dir.0.join("catalog.json");
    let run = carmy(&[
        "client",
        "-s",
        &stdio_server(""),
        "read-resource",
        "-u",
        "shop://catalog",
        "-o",
        saved.to_str().expect("UTF-8"),
    ])
    .ok();
    assert!(run.stdout.contains("saved to"), "{run:#?}");
    let catalog: Value =
        serde_json::from_slice(&std::fs::read(&saved).expect("saved")).expect("JSON");
    assert!(catalog.to_string().contains("sku-001"));
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let child = Command::new(CARMY)
        .env("CARMY_STORE", "memory")
        .args(["client", "-s", &stdio_server(""), "list-tools"])
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("carmy starts");
    let run = finish(child);
    assert_eq!(run.code(), Some(0), "{run:#?}");
    assert!(!run.stderr.contains("panicked"), "{run:#?}");
}
