//! `carmy client` against servers written with the official Python and TypeScript SDKs, over
//! stdio: carmy must work with any MCP server, not only with what rmcp serves.
//!
//! The SDKs are the ones `tests/e2e/run.sh` installs (`tests/e2e/.venv`, `tests/e2e/ts/
//! node_modules`). Where they are missing these tests say so and pass, so that a plain
//! `cargo test` works on a machine without Python or Node; `run.sh` sets
//! `CARMY_SDK_SERVERS=required` and runs them after installing the SDKs, where a missing SDK
//! fails instead.

use crate::common;

use std::path::{Path, PathBuf};

use common::{TempDir, carmy};

const PROTOCOLS: [&str; 2] = ["2025-11-25", "2026-07-28"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn servers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers")
}

/// `Some(())` when `needed` exists; otherwise a notice (or a failure where it is required).
fn available(what: &str, needed: &Path) -> Option<()> {
    if needed.exists() {
        return Some(());
    }
    let notice = format!(
        "{what} is not installed ({} is missing): run `bash tests/e2e/run.sh` once",
        needed.display()
    );
    assert!(
        std::env::var("CARMY_SDK_SERVERS").as_deref() != Ok("required"),
        "{notice}"
    );
    eprintln!("skipped: {notice}");
    None
}

fn python_server() -> Option<String> {
    let python = repo().join("tests/e2e/.venv/bin/python");
    available("the Python MCP SDK", &python)?;
    Some(format!(
        "{} {}",
        python.display(),
        servers().join("python_server.py").display()
    ))
}

fn ts_server() -> Option<String> {
    let modules = repo().join("tests/e2e/ts/node_modules");
    available(
        "the TypeScript MCP SDK",
        &modules.join("@modelcontextprotocol/sdk"),
    )?;
    Some(format!(
        "NODE_PATH={} node {}",
        modules.display(),
        servers().join("ts_server.cjs").display()
    ))
}

/// The commands both SDK servers answer alike; `protocol` is `None` for carmy's default.
fn every_command(server: &str, protocol: Option<&str>) {
    let run = |command: &[&str]| {
        let mut args = vec!["client", "-s", server];
        if let Some(protocol) = protocol {
            args.extend(["--protocol", protocol]);
        }
        args.extend_from_slice(command);
        carmy(&args)
    };
    let context = format!("{server} {protocol:?}");

    let tools = run(&["list-tools"]).ok();
    for tool in ["add", "fail", "slow"] {
        assert!(tools.stdout.contains(tool), "{context}: {tools:#?}");
    }
    let sum = run(&["call-tool", "-n", "add", "-a", r#"{"a": 2, "b": 3}"#]).ok();
    assert_eq!(sum.stdout, "5\n", "{context}");

    let failed = run(&["call-tool", "-n", "fail", "-a", r#"{"reason": "nope"}"#]);
    assert_eq!(failed.code(), Some(1), "{context}: {failed:#?}");
    assert!(failed.stdout.contains("nope"), "{context}: {failed:#?}");

    let slow = run(&[
        "call-tool",
        "-n",
        "slow",
        "-a",
        r#"{"steps": 3}"#,
        "--log-level",
        "info",
    ])
    .ok();
    assert_eq!(slow.stdout, "counted to 3\n", "{context}");
    assert!(
        slow.stderr.contains("progress: 1/3 counting"),
        "{context}: {slow:#?}"
    );
    assert!(
        slow.stderr.contains("progress: 3/3 counting"),
        "{context}: {slow:#?}"
    );
    assert!(slow.stderr.contains("slow is done"), "{context}: {slow:#?}");

    let resources = run(&["list-resources"]).ok();
    assert!(
        resources.stdout.contains("memo://greeting"),
        "{context}: {resources:#?}"
    );
    let templates = run(&["list-templates"]).ok();
    assert!(
        templates.stdout.contains("memo://notes/{name}"),
        "{context}: {templates:#?}"
    );
    let note = run(&["read-resource", "-u", "memo://notes/x"]).ok();
    assert_eq!(note.stdout, "note x\n", "{context}");

    let prompts = run(&["list-prompts"]).ok();
    assert!(
        prompts.stdout.contains("review  code"),
        "{context}: {prompts:#?}"
    );
    let prompt = run(&["get-prompt", "-n", "review", "-a", r#"{"code": "x = 1"}"#]).ok();
    assert!(
        prompt.stdout.contains("[user]\nPlease review:\nx = 1"),
        "{context}: {prompt:#?}"
    );

    let completed = run(&[
        "complete",
        "-r",
        "memo://notes/{name}",
        "--arg",
        "name",
        "--value",
        "al",
    ])
    .ok();
    assert_eq!(completed.stdout, "alpha\nalpine\n", "{context}");

    let listed = run(&["--json", "list-tools"]).ok();
    assert!(
        listed.json()["tools"]
            .as_array()
            .is_some_and(|tools| tools.len() >= 3)
    );

    run(&["ping"]).ok();
}

#[test]
fn a_python_sdk_server_on_both_lifecycles() {
    let Some(server) = python_server() else {
        return;
    };
    for protocol in PROTOCOLS {
        every_command(&server, Some(protocol));
    }
    // The Python SDK serves 2026-07-28: carmy's default negotiates it.
    let pong = carmy(&["client", "-s", &server, "ping"]).ok();
    assert!(pong.stdout.contains("server/discover"), "{pong:#?}");
    let completed = carmy(&[
        "client", "-s", &server, "complete", "-p", "review", "--arg", "code", "--value", "be",
    ])
    .ok();
    assert_eq!(completed.stdout, "beta\n");
}

#[test]
fn a_python_sdk_image_is_summarised_and_saved() {
    let Some(server) = python_server() else {
        return;
    };
    let dir = TempDir::new("pixel");
    let saved = dir.0.join("pixel.png");
    let shown = carmy(&["client", "-s", &server, "call-tool", "-n", "pixel"]).ok();
    assert_eq!(shown.stdout, "[image/png, 70 bytes]\n");
    let run = carmy(&[
        "client",
        "-s",
        &server,
        "call-tool",
        "-n",
        "pixel",
        "-o",
        saved.to_str().expect("UTF-8"),
    ])
    .ok();
    assert!(run.stdout.contains("saved to"), "{run:#?}");
    let bytes = std::fs::read(&saved).expect("saved");
    assert_eq!(bytes.len(), 70);
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));

    // The same bytes as a resource: a blob, summarised and saved alike.
    let blob = carmy(&[
        "client",
        "-s",
        &server,
        "read-resource",
        "-u",
        "memo://pixel.png",
    ])
    .ok();
    assert_eq!(blob.stdout, "[image/png, 70 bytes]\n");
    let resaved = dir.0.join("again.png");
    carmy(&[
        "client",
        "-s",
        &server,
        "read-resource",
        "-u",
        "memo://pixel.png",
        "-o",
        resaved.to_str().expect("UTF-8"),
    ])
    .ok();
    assert_eq!(std::fs::read(&resaved).expect("saved"), bytes);
}

#[test]
fn a_typescript_sdk_server_speaks_2025_11_25() {
    let Some(server) = ts_server() else {
        return;
    };
    // The TS SDK 1.x knows only `initialize`: asked for nothing, carmy falls back to it.
    every_command(&server, None);
    every_command(&server, Some("2025-11-25"));
    let pong = carmy(&["client", "-s", &server, "ping"]).ok();
    assert!(pong.stdout.contains("answered ping"), "{pong:#?}");
    // Asked for 2026-07-28 only, there is no session to be had.
    let refused = carmy(&["client", "-s", &server, "--protocol", "2026-07-28", "ping"]);
    assert_eq!(refused.code(), Some(3), "{refused:#?}");
}

#[test]
fn set_log_level_refused_on_2026_07_28_says_where_the_level_goes() {
    let Some(server) = python_server() else {
        return;
    };
    let refused = carmy(&[
        "client",
        "-s",
        &server,
        "--protocol",
        "2026-07-28",
        "set-log-level",
        "-l",
        "info",
    ]);
    assert_eq!(refused.code(), Some(1), "{refused:#?}");
    assert!(
        refused.stderr.contains("the server answered -32601"),
        "{refused:#?}"
    );
    assert!(
        refused.stderr.contains(
            "hint: 2026-07-28 has no logging/setLevel; pass --log-level LEVEL to call-tool"
        ),
        "{refused:#?}"
    );
}
