//! What carmy does differently on a terminal: progress as a bar redrawn in place, and the
//! server's questions asked rather than declined. A pseudo-terminal comes from util-linux's
//! `script`; without it these tests say so and pass.

use crate::common;

use std::{
    io::{Read, Write},
    process::{Command, Stdio},
    time::Duration,
};

use common::{
    CARMY, Watchdog, finish,
    hostile::{Behaviour, Hostile},
    stdio_server,
};

/// `carmy args…` under `script`, so that its stdin and stderr are a terminal; `typed` is what
/// the user types. Returns carmy's status (`script -e` passes it on) and everything the
/// terminal showed (stdout and stderr together).
fn on_a_terminal(args: &[&str], typed: &str) -> Option<(Option<i32>, String)> {
    let mut child = script(args)?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(typed.as_bytes())
        .expect("typed");
    let run = finish(child);
    Some((run.code(), run.stdout))
}

/// [`on_a_terminal`], the user typing only once the terminal shows `shown`, and `pause` later.
fn answered_late(
    args: &[&str],
    shown: &str,
    pause: Duration,
    typed: &str,
) -> Option<(Option<i32>, String)> {
    let mut child = script(args)?;
    let _watchdog = Watchdog::new(child.id());
    let mut terminal = child.stdout.take().expect("piped");
    let mut seen = Vec::new();
    let mut chunk = [0; 4096];
    while !String::from_utf8_lossy(&seen).contains(shown) {
        let read = terminal.read(&mut chunk).expect("the terminal");
        assert!(
            read > 0,
            "the terminal closed: {:?}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&chunk[..read]);
    }
    std::thread::sleep(pause);
    let mut stdin = child.stdin.take().expect("piped");
    stdin.write_all(typed.as_bytes()).expect("typed");
    terminal.read_to_end(&mut seen).expect("the terminal");
    let status = child.wait().expect("script ends");
    drop(stdin);
    Some((status.code(), String::from_utf8_lossy(&seen).into_owned()))
}

/// `script` running carmy, or `None` (and a notice) without `script`.
fn script(args: &[&str]) -> Option<std::process::Child> {
    let has_script = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !has_script {
        eprintln!(
            "skipped: `script` (util-linux) is not installed, so there is no terminal to test on"
        );
        return None;
    }
    let quoted: Vec<String> = std::iter::once(CARMY)
        .chain(args.iter().copied())
        .map(|arg| format!("'{}'", arg.replace('\'', r"'\''")))
        .collect();
    Some(
        Command::new("script")
            .args(["-qec", &quoted.join(" "), "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script starts"),
    )
}

#[test]
fn progress_is_a_bar_redrawn_in_place_on_a_terminal() {
    let Some((status, shown)) = on_a_terminal(
        &[
            "client",
            "-s",
            &stdio_server(""),
            "call-tool",
            "-n",
            "sales_report",
            "-a",
            r#"{"seconds": 1}"#,
        ],
        "",
    ) else {
        return;
    };
    assert_eq!(status, Some(0), "{shown:?}");
    assert!(shown.contains("\r\x1b[2K[###"), "{shown:?}");
    assert!(
        shown.contains(&format!("[{}] 100% crunching orders", "#".repeat(30))),
        "{shown:?}"
    );
    assert!(!shown.contains("progress: "), "{shown:?}");
    assert!(shown.contains("\"orders\": 0"), "{shown:?}");
}

#[test]
fn a_question_is_asked_on_a_terminal_and_the_answer_sent() {
    for protocol in ["2025-11-25", "2026-07-28"] {
        // The shop asks to approve `cancel_order` (a boolean), then carmy asks to send it.
        let Some((status, shown)) = on_a_terminal(
            &[
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
            ],
            "y\ny\n",
        ) else {
            return;
        };
        assert_eq!(status, Some(1), "{protocol}: {shown:?}");
        assert!(
            shown.contains("the server asks: Allow `cancel_order`"),
            "{protocol}: {shown:?}"
        );
        assert!(
            shown.contains("Send this answer? [y/N]"),
            "{protocol}: {shown:?}"
        );
        // Approved, the call ran: there is no such order in a fresh shop.
        assert!(shown.contains("ORDER_NOT_FOUND"), "{protocol}: {shown:?}");
        assert!(
            !shown.contains("CONFIRMATION_DECLINED"),
            "{protocol}: {shown:?}"
        );
    }
}

#[test]
fn a_question_answered_no_on_a_terminal_is_declined() {
    let Some((status, shown)) = on_a_terminal(
        &[
            "client",
            "-s",
            &stdio_server("--confirm-via-client"),
            "call-tool",
            "-n",
            "cancel_order",
            "-a",
            r#"{"order_id": "ord-1001"}"#,
        ],
        "y\nn\n",
    ) else {
        return;
    };
    assert_eq!(status, Some(1), "{shown:?}");
    assert!(shown.contains("CONFIRMATION_DECLINED"), "{shown:?}");
}

#[test]
fn server_text_cannot_drive_the_terminal() {
    let server = Hostile::start(Behaviour::default());
    // Progress drawn as a bar, a log line, the result; then a question asked and answered.
    for (tool, typed) in [("evil", ""), ("ask", "forty-two\ny\n")] {
        let Some((status, shown)) = on_a_terminal(
            &[
                "client",
                "-t",
                "unix",
                "-s",
                &server.socket,
                "--protocol",
                "2025-11-25",
                "call-tool",
                "-n",
                tool,
                "--log-level",
                "info",
            ],
            typed,
        ) else {
            return;
        };
        assert_eq!(status, Some(0), "{tool}: {shown:?}");
        // The terminal shows carmy's own control sequences (the bar redrawn), none of the
        // server's.
        for raw in ["\x1b]", "\x1b[2J", "\u{9b}", "\x07", "\x7f"] {
            assert!(
                !shown.contains(raw),
                "{tool}: {raw:?} reached it: {shown:?}"
            );
        }
        assert!(shown.contains(r"\x1b]0;pwned\x07"), "{tool}: {shown:?}");
    }
}

#[test]
fn the_timeout_waits_while_the_user_answers_a_question() {
    // The server waits for the answer within its call; the user takes longer than --timeout
    // to give it, and the call is not given up on meanwhile.
    let server = Hostile::start(Behaviour::default());
    let Some((status, shown)) = answered_late(
        &[
            "client",
            "-t",
            "unix",
            "-s",
            &server.socket,
            "--protocol",
            "2025-11-25",
            "--timeout",
            "1",
            "call-tool",
            "-n",
            "ask",
        ],
        "answer (",
        Duration::from_secs(3),
        "forty-two\ny\n",
    ) else {
        return;
    };
    assert_eq!(status, Some(0), "{shown:?}");
    assert!(shown.contains("answered"), "{shown:?}");
    assert!(shown.contains("forty-two"), "{shown:?}");
}
