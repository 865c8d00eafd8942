//! What the user sees on stderr while a request runs: progress notifications, and the server's
//! log messages, which must not tear a progress bar drawn on the same line.
//!
//! On a terminal, progress is one line redrawn in place; anywhere else (a log file, a test) it
//! is one plain line per notification, since carriage returns only garble a file. The server's
//! words are escaped (`escape.rs`) before carmy's own control sequences are added.

use std::{
    io::{IsTerminal, Write},
    sync::Mutex,
};

use rmcp::model::ProgressNotificationParam;

use crate::escape;

const BAR_WIDTH: usize = 30;

#[derive(Debug)]
pub(crate) struct Stderr {
    terminal: bool,
    /// Whether a bar is drawn on the current line, to be cleared before anything else.
    bar_drawn: Mutex<bool>,
}

impl Stderr {
    pub(crate) fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            bar_drawn: Mutex::new(false),
        }
    }

    pub(crate) fn progress(&self, params: &ProgressNotificationParam) {
        let mut drawn = self.bar_drawn.lock().unwrap_or_else(|e| e.into_inner());
        let mut stderr = std::io::stderr().lock();
        let message = escape::field(params.message.as_deref().unwrap_or(""));
        // Writes to stderr that fail have nowhere to be reported: they are dropped.
        if self.terminal {
            let _ = write!(
                stderr,
                "\r\x1b[2K{}",
                bar(params.progress, params.total, &message)
            );
            let _ = stderr.flush();
            *drawn = true;
        } else {
            let _ = writeln!(
                stderr,
                "progress: {}",
                plain(params.progress, params.total, &message)
            );
        }
    }

    /// One line on stderr, below any progress bar.
    pub(crate) fn line(&self, text: &str) {
        let mut drawn = self.bar_drawn.lock().unwrap_or_else(|e| e.into_inner());
        let mut stderr = std::io::stderr().lock();
        if std::mem::take(&mut *drawn) {
            let _ = write!(stderr, "\r\x1b[2K");
        }
        let _ = writeln!(stderr, "{}", escape::text(text));
    }

    /// Clears the bar, once the request is over.
    pub(crate) fn finish(&self) {
        let mut drawn = self.bar_drawn.lock().unwrap_or_else(|e| e.into_inner());
        if std::mem::take(&mut *drawn) {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

fn plain(progress: f64, total: Option<f64>, message: &str) -> String {
    let amount = match total {
        Some(total) => format!("{progress}/{total}"),
        None => format!("{progress}"),
    };
    if message.is_empty() {
        amount
    } else {
        format!("{amount} {message}")
    }
}

fn bar(progress: f64, total: Option<f64>, message: &str) -> String {
    match total.filter(|total| *total > 0.0) {
        Some(total) => {
            let fraction = (progress / total).clamp(0.0, 1.0);
            // The fraction is within [0, 1]: the cast cannot overflow.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let filled = (fraction * BAR_WIDTH as f64).round() as usize;
            format!(
                "[{}{}] {:>3.0}% {message}",
                "#".repeat(filled),
                "-".repeat(BAR_WIDTH - filled),
                fraction * 100.0
            )
        }
        None => format!("[{progress}] {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{bar, plain};

    #[test]
    fn a_bar_fills_with_the_fraction_done() {
        assert_eq!(
            bar(5.0, Some(10.0), "half"),
            format!("[{}{}]  50% half", "#".repeat(15), "-".repeat(15))
        );
        assert!(bar(20.0, Some(10.0), "").contains(&"#".repeat(30)));
        assert_eq!(bar(3.0, None, "steps"), "[3] steps");
    }

    #[test]
    fn plain_lines_say_the_amount_and_the_message() {
        assert_eq!(plain(4.0, Some(50.0), "crunching"), "4/50 crunching");
        assert_eq!(plain(4.0, None, ""), "4");
    }
}
