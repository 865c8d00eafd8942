//! The one way results reach stdout, escaped (`escape.rs`): the server's text cannot drive the
//! terminal, and JSON keeps its value.
//!
//! A reader that stops early (`carmy client … list-tools | head -1`) closes the pipe and the
//! next write fails with `BrokenPipe` (Rust ignores `SIGPIPE`, so `println!` would panic). The
//! request has been answered by then: the run ends quietly with the status of its result, as
//! `carmy::cli` does for the same reason (see `carmy/src/cli/render.rs`). Any other write error
//! loses output and fails the run.

use std::io::{ErrorKind, Write};

use crate::exit::Failure;

/// Whether anyone still reads stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Printed {
    Shown,
    ReaderGone,
}

/// Writes `text` and a newline (unless it ends with one) to stdout through one lock.
pub(crate) fn print(text: &str) -> Result<Printed, Failure> {
    let text = crate::escape::text(text);
    let mut stdout = std::io::stdout().lock();
    let written = if text.ends_with('\n') {
        write!(stdout, "{text}")
    } else {
        writeln!(stdout, "{text}")
    };
    match written.and_then(|()| stdout.flush()) {
        Ok(()) => Ok(Printed::Shown),
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(Printed::ReaderGone),
        Err(error) => Err(Failure::Output(format!("cannot write the output: {error}"))),
    }
}

/// [`print`] for a command that prints once: a gone reader is not a failure.
pub(crate) fn print_once(text: &str) -> Result<(), Failure> {
    print(text).map(drop)
}

/// `value` as JSON on one line.
pub(crate) fn compact(value: &serde_json::Value) -> String {
    crate::escape::json(value.to_string())
}

/// `result` as indented JSON: what `--json` prints.
pub(crate) fn json_of(result: &impl serde::Serialize) -> String {
    serde_json::to_value(result)
        .map(|value| crate::escape::pretty(&value))
        .unwrap_or_else(|error| format!("{{\"error\": \"cannot encode the result: {error}\"}}"))
}
