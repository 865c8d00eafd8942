//! The catalog as a table for people and as JSON for programs, and the one way output reaches
//! stdout.

use std::{
    fmt::Write as _,
    io::{ErrorKind, Write as _},
    process::ExitCode,
};

use carmy_core::{Catalog, Confirmation, ToolEntry};
use serde_json::{Value, json};

pub(super) fn tool_json(entry: &ToolEntry) -> Value {
    json!({
        "name": entry.name(),
        "title": entry.title(),
        "description": entry.description(),
        "effect": entry.effect().as_str(),
        "idempotent": entry.idempotent(),
        "parallel_safe": entry.parallel_safe(),
        "confirmation": entry.confirmation().as_str(),
        "timeout_ms": u64::try_from(entry.timeout().as_millis()).unwrap_or(u64::MAX),
        "input_schema": &**entry.input_schema(),
        "output_schema": &**entry.output_schema(),
    })
}

pub(super) fn tool_table(catalog: &Catalog) -> String {
    let rows: Vec<[String; 4]> = catalog
        .iter()
        .map(|entry| {
            let mut flags = Vec::new();
            if entry.idempotent() {
                flags.push("idempotent");
            }
            if entry.confirmation() == Confirmation::Required {
                flags.push("confirm");
            }
            if !entry.parallel_safe() {
                flags.push("serial");
            }
            let summary = summary(entry.description(), 72);
            [
                entry.name().to_owned(),
                entry.effect().as_str().to_owned(),
                flags.join(","),
                summary,
            ]
        })
        .collect();
    let header = ["TOOL", "EFFECT", "POLICY", "DESCRIPTION"].map(str::to_owned);
    let mut widths = header.clone().map(|cell| cell.len());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line = format!(
            "{:w0$}  {:w1$}  {:w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// Writes `text` (and a final newline when it lacks one) to stdout, through one lock so that
/// the output is not interleaved with anything else the process prints.
///
/// A reader that stops early (`shop tools | head -1`) closes the pipe and the next write fails
/// with `BrokenPipe`: Rust ignores `SIGPIPE`, so `println!` would panic there. That is not a
/// failure of the command: it did what it was asked and whoever reads chose to stop, so it
/// ends quietly and the command keeps its own status (0, or 1 for a call that failed). We do
/// not imitate the 141 of a process killed by `SIGPIPE`: under `set -o pipefail` that status
/// would fail a script for a pipeline where nothing went wrong, and restoring the signal's
/// default action needs `unsafe`, which this workspace forbids. Any other write error (a full
/// disk, `>/dev/full`) means the output is lost: it is reported and the command fails (`Err`
/// holds the status to exit with).
pub(super) fn print_stdout(text: &str) -> Result<(), ExitCode> {
    let mut stdout = std::io::stdout().lock();
    let written = if text.ends_with('\n') {
        write!(stdout, "{text}")
    } else {
        writeln!(stdout, "{text}")
    };
    match written.and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(error) => {
            eprintln!("error: cannot write the output: {error}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// The first paragraph on one line, cut at a word boundary to at most `max` characters.
fn summary(description: &str, max: usize) -> String {
    let paragraph = description.split("\n\n").next().unwrap_or_default();
    let words: Vec<&str> = paragraph.split_whitespace().collect();
    let mut out = String::new();
    for word in words {
        let needed = out.chars().count() + word.chars().count() + usize::from(!out.is_empty());
        if needed > max.saturating_sub(1) {
            out.push('…');
            return out;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn summaries_fit_a_terminal_line() {
        assert_eq!(summary("Short.", 72), "Short.");
        assert_eq!(
            summary("One two\nthree.\n\nSecond paragraph.", 72),
            "One two three."
        );
        assert_eq!(summary("aaa bbb ccc", 8), "aaa bbb…");
    }
}
