//! `carmy client` facing a hostile server (`common/hostile.rs`): what the server writes cannot
//! drive the user's terminal, a list without end is cut, a silent server is given up on.

use crate::common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
};

use common::{
    CARMY, Run, Watchdog, carmy, finish,
    hostile::{Behaviour, EVIL, Hostile},
    interrupt, wait_for_line,
};
use serde_json::Value;

/// `carmy client -t unix -s <server> --protocol 2025-11-25 <args…>`.
fn client(server: &Hostile, args: &[&str]) -> Run {
    let mut all = vec![
        "client",
        "-t",
        "unix",
        "-s",
        &server.socket,
        "--protocol",
        "2025-11-25",
    ];
    all.extend_from_slice(args);
    carmy(&all)
}

/// No control character but line feeds, tabs and CRLF line ends, and the hostile text shown
/// (escaped) rather than dropped.
#[track_caller]
fn assert_inert(shown: &str, context: &str) {
    assert_no_control(shown, context);
    assert!(
        shown.contains(r"\x1b]0;pwned\x07"),
        "{context}: the server's text is not shown: {shown:?}"
    );
}

/// No control character but line feeds, tabs and CRLF line ends.
#[track_caller]
fn assert_no_control(shown: &str, context: &str) {
    let mut chars = shown.chars().peekable();
    while let Some(c) = chars.next() {
        let line_end = c == '\r' && chars.peek() == Some(&'\n');
        assert!(
            !c.is_control() || c == '\n' || c == '\t' || line_end,
            "{context}: a raw {c:?} reached the terminal: {shown:?}"
        );
    }
}

/// No line of `shown` starts with what followed the server's line break: each value the server
/// sent for one line (a cell, a log line, a progress message, an error message) stayed on it.
#[track_caller]
fn assert_no_forged_line(shown: &str, context: &str) {
    assert!(
        !shown.lines().any(|line| line.starts_with("error: forged")),
        "{context}: a line forged by the server: {shown:?}"
    );
}

#[test]
fn server_text_reaches_the_terminal_escaped() {
    let server = Hostile::start(Behaviour {
        pages: Some(2),
        ..Behaviour::default()
    });
    for (command, status) in [
        (&["list-tools"][..], 0),
        (&["list-resources"], 0),
        (&["list-templates"], 0),
        (&["list-prompts"], 0),
        (&["call-tool", "-n", "evil", "--log-level", "info"], 0),
        (&["call-tool", "-n", "is_error"], 1),
        (&["call-tool", "-n", "fail"], 1),
        // Without a terminal the question is shown, and declined.
        (&["call-tool", "-n", "ask"], 0),
        (&["read-resource", "-u", "x"], 0),
        (&["get-prompt", "-n", "x"], 0),
        (&["complete", "-p", "x", "--arg", "a"], 0),
    ] {
        let run = client(&server, command);
        let context = format!("{command:?}");
        assert_eq!(run.code(), Some(status), "{context}: {run:#?}");
        assert_inert(&format!("{}{}", run.stdout, run.stderr), &context);
        // Only a result's own text keeps its lines (on stdout); nothing else does.
        assert_no_forged_line(&run.stderr, &context);
        if command[0].starts_with("list") || command[0] == "complete" {
            assert_no_forged_line(&run.stdout, &context);
        }
    }
}

#[test]
fn subscription_updates_are_escaped() {
    let server = Hostile::start(Behaviour::default());
    for json in [false, true] {
        let mut args = vec![
            "client",
            "-t",
            "unix",
            "-s",
            &server.socket,
            "--protocol",
            "2025-11-25",
            "subscribe",
            "-u",
            "x",
        ];
        if json {
            args.push("--json");
        }
        let mut child = Command::new(CARMY)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("carmy starts");
        let _watchdog = Watchdog::new(child.id());
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let seen = wait_for_line(&mut stderr, "Ctrl-C to stop");
        let mut line = String::new();
        stdout.read_line(&mut line).expect("an update");
        interrupt(child.id());
        child.stderr = Some(stderr.into_inner());
        child.stdout = Some(stdout.into_inner());
        let run = finish(child);
        assert_eq!(run.code(), Some(130), "{run:#?}");
        let shown = format!("{seen}{line}{}", run.stdout);
        assert_no_control(&shown, &format!("subscribe, json: {json}"));
        if json {
            let update: Value = serde_json::from_str(&line).expect("a JSON line");
            assert_eq!(update["params"]["uri"], EVIL, "{line}");
        } else {
            assert!(line.starts_with(r"updated evil\x1b]0;pwned"), "{line:?}");
            assert_eq!(line.matches('\n').count(), 1, "{line:?}");
        }
    }
}

#[test]
fn json_output_is_exact_and_inert() {
    let server = Hostile::start(Behaviour {
        pages: Some(1),
        ..Behaviour::default()
    });
    for (command, pointer) in [
        (&["list-tools"][..], "/tools/0/description"),
        (&["call-tool", "-n", "evil"], "/content/0/text"),
        (&["read-resource", "-u", "x"], "/contents/0/text"),
        (&["get-prompt", "-n", "x"], "/description"),
        (
            &["complete", "-p", "x", "--arg", "a"],
            "/completion/values/0",
        ),
    ] {
        let mut args = vec!["--json"];
        args.extend_from_slice(command);
        let run = client(&server, &args).ok();
        // JSON escapes every control character in a string: the raw text has none left.
        assert_no_control(&run.stdout, &format!("{command:?}"));
        assert_eq!(
            run.json().pointer(pointer),
            Some(&Value::from(EVIL)),
            "{command:?}: {}",
            run.stdout
        );
    }
}

#[test]
fn a_list_without_end_stops_at_the_page_limit() {
    // By default: 1,000 pages, then a failure that says how to follow more.
    let server = Hostile::start(Behaviour::default());
    let run = client(&server, &["list-tools"]);
    assert_eq!(run.code(), Some(1), "{run:#?}");
    assert!(run.stderr.contains("--max-pages"), "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert_eq!(server.pages(), 1000);
    // Each list, with the limit set.
    for command in [
        "list-tools",
        "list-resources",
        "list-templates",
        "list-prompts",
    ] {
        let server = Hostile::start(Behaviour::default());
        let run = client(&server, &["--max-pages", "3", "--json", command]);
        assert_eq!(run.code(), Some(1), "{command}: {run:#?}");
        assert!(
            run.stderr.contains("did not end within 3 pages"),
            "{command}: {run:#?}"
        );
        assert!(run.stdout.is_empty(), "{command}: {run:#?}");
        assert_eq!(server.pages(), 3, "{command}");
    }
    // A list of exactly that many pages is whole.
    let server = Hostile::start(Behaviour {
        pages: Some(3),
        ..Behaviour::default()
    });
    let listed = client(&server, &["--max-pages", "3", "--json", "list-tools"]).ok();
    assert_eq!(listed.json()["tools"].as_array().map(Vec::len), Some(3));
}

#[test]
fn a_silent_server_is_given_up_on_with_status_4() {
    // While opening the session.
    let silent = Hostile::start(Behaviour {
        silent: true,
        ..Behaviour::default()
    });
    let run = client(&silent, &["--timeout", "1", "ping"]);
    assert_eq!(run.code(), Some(4), "{run:#?}");
    assert!(run.stderr.contains("initialize"), "{run:#?}");
    assert!(run.stderr.contains("--timeout"), "{run:#?}");
    // A request, once the session is open: each names what went unanswered.
    let mute = Hostile::start(Behaviour {
        silent_after_initialize: true,
        ..Behaviour::default()
    });
    for (command, method) in [
        (&["ping"][..], "ping"),
        (&["list-tools"], "tools/list"),
        (&["read-resource", "-u", "x"], "resources/read"),
        (&["get-prompt", "-n", "x"], "prompts/get"),
        (
            &["complete", "-p", "x", "--arg", "a"],
            "completion/complete",
        ),
        (&["subscribe", "-u", "x"], "resources/subscribe"),
    ] {
        let mut args = vec!["--timeout", "1"];
        args.extend_from_slice(command);
        let run = client(&mute, &args);
        assert_eq!(run.code(), Some(4), "{command:?}: {run:#?}");
        assert!(
            run.stderr.contains(&format!("no answer to {method}")),
            "{command:?}: {run:#?}"
        );
    }
}

#[test]
fn a_call_past_its_timeout_is_cancelled_on_the_server() {
    let server = Hostile::start(Behaviour::default());
    let run = client(&server, &["--timeout", "1", "call-tool", "-n", "silent"]);
    assert_eq!(run.code(), Some(4), "{run:#?}");
    assert!(run.stderr.contains("no answer to tools/call"), "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
    let received = server.session();
    let call = received
        .iter()
        .find(|message| message["method"] == "tools/call")
        .expect("the call");
    let cancelled = received
        .iter()
        .find(|message| message["method"] == "notifications/cancelled")
        .expect("a cancellation");
    assert_eq!(
        cancelled["params"]["requestId"], call["id"],
        "{received:#?}"
    );
}

#[test]
fn progress_keeps_a_call_alive_past_the_timeout() {
    // Progress every 100 ms for 3 s: the server is not silent, however long the call takes.
    let server = Hostile::start(Behaviour::default());
    let run = client(
        &server,
        &[
            "--timeout",
            "1",
            "call-tool",
            "-n",
            "slow",
            "-a",
            r#"{"seconds": 3}"#,
        ],
    );
    assert_eq!(run.code(), Some(0), "{run:#?}");
    assert_eq!(run.stdout, "done\n", "{run:#?}");
    assert!(run.stderr.contains("progress: 30/30"), "{run:#?}");
}

#[test]
fn the_timeout_is_a_minute_unless_given() {
    let help = carmy(&["client", "--help"]).ok();
    // The option's own paragraph, up to the next option.
    let timeout = help
        .stdout
        .lines()
        .skip_while(|line| !line.trim_start().starts_with("--timeout"))
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('-'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(timeout.contains("[default: 60]"), "{}", help.stdout);
}
