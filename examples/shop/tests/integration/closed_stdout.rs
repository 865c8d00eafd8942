//! Every command that prints ends quietly when its reader has gone (`shop tools | head -1`).
//!
//! The reader end of stdout's pipe is closed *before* the shop starts, so its first write fails
//! with `EPIPE` every time: a pipe left open until after the child wrote would let the output fit
//! in the pipe's buffer and the test pass without ever exercising the closed pipe.

use std::process::{Command, Output, Stdio};

/// `shop args…` with a stdout nobody reads.
fn shop_with_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_shop"))
        .args(args)
        .env_remove("RUST_LOG")
        .env("CARMY_STORE", "memory")
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("the shop binary starts")
}

fn assert_quiet(args: &[&str], status: i32) {
    let output = shop_with_closed_stdout(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "`shop {}` complained: {stderr}",
        args.join(" ")
    );
    assert_eq!(
        output.status.code(),
        Some(status),
        "`shop {}`: {stderr}",
        args.join(" ")
    );
}

#[test]
fn listing_the_tools_into_a_closed_pipe_ends_quietly() {
    assert_quiet(&["tools"], 0);
    assert_quiet(&["tools", "--json"], 0);
}

#[test]
fn listing_resources_and_prompts_into_a_closed_pipe_ends_quietly() {
    assert_quiet(&["resources"], 0);
    assert_quiet(&["prompts", "--json"], 0);
}

#[test]
fn printing_a_schema_into_a_closed_pipe_ends_quietly() {
    assert_quiet(&["schema", "place_order"], 0);
}

#[test]
fn a_call_into_a_closed_pipe_keeps_its_own_status() {
    assert_quiet(&["call", "search_products", r#"{"query": "mouse"}"#], 0);
    // The call failed (it needs a confirmation): that is still its status with nobody reading.
    assert_quiet(&["call", "cancel_order", r#"{"order_id": "ord-1001"}"#], 1);
}

#[test]
fn help_into_a_closed_pipe_ends_quietly() {
    assert_quiet(&["--help"], 0);
}

/// Anything else that loses the output is a failure, said on stderr.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_fails_the_command() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let output = Command::new(env!("CARGO_BIN_EXE_shop"))
        .args(["schema", "place_order"])
        .env_remove("RUST_LOG")
        .env("CARMY_STORE", "memory")
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .expect("the shop binary starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot write the output"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
