//! Logs that no client can forge or swell.
//!
//! Log statements quote what clients send: request ids, tool names, parse errors that echo the
//! input, and rmcp logs whole requests and answers (`?request`, `?error`). A string id holding a
//! newline would write a line of the client's choosing into the log, and a 4 MB tool name would
//! be written out in full on every line that mentions the request. So every event, whatever
//! crate it comes from, goes through two guards here:
//! - [`CappedFields`] formats each field (the message included) into at most [`FIELD_BYTES`],
//!   stopping the field's formatting there, so a huge value costs nothing past the cap;
//!   and escapes their control characters (`\n` becomes the two characters `\` `n`; so do the
//!   Unicode line separators and bidirectional overrides, which some viewers honour);
//! - [`SafeLine`] escapes them in the whole formatted line as well and cuts it at [`LINE_BYTES`].
//!   The one newline of a log line is the one it ends with.
//!
//! `pretty` (`pretty.rs`) lays an event over several lines of its own, its values cut and
//! escaped the same way, so no value can add a line there either; `json` (`json.rs`) writes one
//! JSON object per line, its fields cut the same way.

mod json;
mod pretty;

use std::fmt::{self, Write as _};

use tracing::{Event, Subscriber, field::Field};

use super::config::{LogFormat, Logging};
use tracing_subscriber::{
    field::{RecordFields, Visit},
    fmt::{
        FmtContext, FormatEvent, FormatFields,
        format::{self, Writer},
    },
    registry::LookupSpan,
};

/// The most bytes of one field written to a log line.
pub(super) const FIELD_BYTES: usize = 1024;
/// The most bytes of one log line, its newline excluded.
pub(super) const LINE_BYTES: usize = 4096;

/// Logs to stderr (or to `logging.file`), so stdout stays clean for the protocol, filtered by
/// `logging.level` (which `RUST_LOG` sets when nothing else does). With `mcp`, the events of a
/// request also go to its client when it asked for them (`logging/setLevel`), through
/// [`carmy_mcp::ClientLogLayer`], whatever the level says: each layer filters alone.
pub(super) fn init(settings: &Logging) -> Result<(), String> {
    use tracing_subscriber::{fmt::writer::BoxMakeWriter, prelude::*};

    let filter = tracing_subscriber::EnvFilter::try_new(&settings.level)
        .map_err(|error| format!("logging.level {:?}: {error}", settings.level))?;
    let writer = match &settings.file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|error| format!("logging.file {}: {error}", path.display()))?;
            BoxMakeWriter::new(std::sync::Mutex::new(file))
        }
        None => BoxMakeWriter::new(std::io::stderr),
    };
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(false)
        .fmt_fields(CappedFields);
    let lines = match settings.format {
        LogFormat::Full => lines.event_format(SafeLine(format::format())).boxed(),
        LogFormat::Compact => lines
            .event_format(SafeLine(format::format().compact()))
            .boxed(),
        LogFormat::Pretty => lines
            .event_format(pretty::PrettyLines { with_time: true })
            .boxed(),
        LogFormat::Json => lines.event_format(json::JsonLine).boxed(),
    };
    let registry = tracing_subscriber::registry().with(lines.with_filter(filter));
    let registry = registry.with(carmy_mcp::ClientLogLayer.with_filter(for_clients()));
    let _ = registry.try_init();
    Ok(())
}

/// The logging of a subcommand that reads no configuration: `RUST_LOG`, else the default.
pub(super) fn from_environment() -> Logging {
    let mut logging = Logging::default();
    if let Some(level) = std::env::var("RUST_LOG")
        .ok()
        .filter(|level| tracing_subscriber::EnvFilter::try_new(level).is_ok())
    {
        logging.level = level;
    }
    logging
}

/// What a client may be sent: events (spans never reach it, so none is kept for it), from
/// every crate but the ones that serve the protocol, whose lines speak of the wire rather than
/// of the request, and would cost each request their formatting.
fn for_clients<S>() -> impl tracing_subscriber::layer::Filter<S> {
    use tracing::level_filters::LevelFilter;
    use tracing_subscriber::filter::{FilterExt, Targets, filter_fn};

    let targets = Targets::new()
        .with_default(LevelFilter::DEBUG)
        .with_targets(
            [
                "rmcp",
                "hyper",
                "hyper_util",
                "h2",
                "tower",
                "axum",
                "tokio",
                "mio",
            ]
            .map(|target| (target, LevelFilter::OFF)),
        );
    targets.and(filter_fn(|metadata| metadata.is_event()))
}

/// Formats fields as `tracing_subscriber`'s default does (`message name=value ...`), each cut
/// at [`FIELD_BYTES`] and its control characters escaped.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CappedFields;

impl<'writer> FormatFields<'writer> for CappedFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = CappedVisitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct CappedVisitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl CappedVisitor<'_> {
    fn field(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        if self.result.is_err() {
            return;
        }
        let separator = if std::mem::take(&mut self.first) {
            ""
        } else {
            " "
        };
        self.result = match field.name() {
            "message" => write!(self.writer, "{separator}"),
            name => write!(
                self.writer,
                "{separator}{}=",
                name.strip_prefix("r#").unwrap_or(name)
            ),
        };
        if self.result.is_err() {
            return;
        }
        self.result = write_capped(&mut Escaping(&mut self.writer), value);
    }
}

impl Visit for CappedVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.field(field, format_args!("{value}"));
        } else {
            self.field(field, format_args!("{value:?}"));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.field(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.field(field, format_args!("{value:?}"));
    }
}

/// Writes `value` into `out`, cut at [`FIELD_BYTES`] (then ended with `…`).
fn write_capped(out: &mut impl fmt::Write, value: fmt::Arguments<'_>) -> fmt::Result {
    let mut capped = Capped {
        out: &mut *out,
        left: FIELD_BYTES,
        cut: false,
    };
    // A cut stops the value's formatting with an error, which is expected here.
    let written = capped.write_fmt(value);
    if capped.cut {
        out.write_str("…")
    } else {
        written
    }
}

/// A writer that escapes the control characters of what it is given (as [`safe_line`] does).
struct Escaping<'a, W>(&'a mut W);

impl<W: fmt::Write> fmt::Write for Escaping<'_, W> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let mut plain = 0;
        for (at, character) in text.char_indices() {
            if needs_escape(character) {
                self.0.write_str(&text[plain..at])?;
                push_escaped(self.0, character)?;
                plain = at + character.len_utf8();
            }
        }
        self.0.write_str(&text[plain..])
    }
}

/// The short escape of a character, if it has one.
fn escape(character: char) -> Option<&'static str> {
    match character {
        '\n' => Some("\\n"),
        '\r' => Some("\\r"),
        '\t' => Some("\\t"),
        _ => None,
    }
}

/// Writes `character` escaped.
fn push_escaped(out: &mut impl fmt::Write, character: char) -> fmt::Result {
    match escape(character) {
        Some(short) => out.write_str(short),
        None => write!(out, "\\u{{{:04x}}}", u32::from(character)),
    }
}

/// A writer that takes `left` more bytes (whole characters), then refuses.
struct Capped<'a, W> {
    out: &'a mut W,
    left: usize,
    cut: bool,
}

impl<W: fmt::Write> fmt::Write for Capped<'_, W> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        if text.len() <= self.left {
            self.left -= text.len();
            return self.out.write_str(text);
        }
        let mut end = self.left;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.out.write_str(&text[..end])?;
        self.left = 0;
        self.cut = true;
        Err(fmt::Error)
    }
}

/// An event formatter whose lines are escaped and cut at [`LINE_BYTES`].
#[derive(Debug)]
pub(super) struct SafeLine<F>(pub(super) F);

impl<S, N, F> FormatEvent<S, N> for SafeLine<F>
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
    N: for<'writer> FormatFields<'writer> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        let line = line.strip_suffix('\n').unwrap_or(&line);
        writer.write_str(&safe_line(line))?;
        writer.write_char('\n')
    }
}

/// `line` with its control characters escaped, cut at [`LINE_BYTES`].
pub(super) fn safe_line(line: &str) -> String {
    let mut safe = String::with_capacity(line.len().min(LINE_BYTES + 64));
    for (at, character) in line.char_indices() {
        let before = safe.len();
        match character {
            c if needs_escape(c) => {
                let _ = push_escaped(&mut safe, c);
            }
            c => safe.push(c),
        }
        if safe.len() > LINE_BYTES {
            safe.truncate(before);
            let _ = write!(safe, "… [{} more bytes]", line.len() - at);
            break;
        }
    }
    safe
}

/// Characters that could end a line, or rewrite or reorder it on a terminal or in a viewer.
fn needs_escape(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use std::{
        io,
        sync::{Arc, Mutex},
    };

    use super::*;

    /// What a subscriber set up like `init`'s wrote while `log` ran.
    fn logged(log: impl FnOnce()) -> String {
        logged_as(SafeLine(format::format().without_time()), log)
    }

    /// The same, with the event formatter `format`.
    fn logged_as<F>(format: F, log: impl FnOnce()) -> String
    where
        F: for<'a> FormatEvent<tracing_subscriber::Registry, CappedFields> + Send + Sync + 'static,
    {
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("trace")
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .without_time()
            .fmt_fields(CappedFields)
            .event_format(format)
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        let bytes = buffer.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_value_cannot_start_a_line() {
        let id = "1\n2026-01-01T00:00:00Z  INFO forged: admin logged in\r\u{2028}\u{1b}[2J";
        let out = logged(|| {
            tracing::info!(%id, "received request");
            tracing::warn!(id, "as a str");
            tracing::error!("in the message: {id}");
            let span = tracing::info_span!("call", tool = %id);
            span.in_scope(|| tracing::info!("inside"));
        });
        assert_eq!(out.lines().count(), 4, "{out}");
        assert!(
            out.lines()
                .all(|line| !line.contains("forged") || line.contains("\\n"))
        );
        assert!(!out.contains('\u{1b}') && !out.contains('\u{2028}') && !out.contains('\r'));
        assert!(out.contains(r"id=1\n2026-01-01"), "{out}");
        assert!(out.contains(r"\u{2028}\u{001b}[2J"), "{out}");
    }

    #[test]
    fn fields_and_lines_are_cut() {
        let huge = "x".repeat(4_000_000);
        let out = logged(|| {
            tracing::debug!(name = %huge, "one field");
            tracing::debug!(request = ?huge, "debug-formatted");
            tracing::debug!(a = %huge, b = %huge, c = %huge, d = %huge, e = %huge, "many");
        });
        assert_eq!(out.lines().count(), 3, "{}", &out[..out.len().min(500)]);
        for line in out.lines() {
            assert!(line.len() <= LINE_BYTES + 64, "{}", line.len());
        }
        let first = out.lines().next().unwrap();
        assert!(
            first.contains("name=xxx") && first.ends_with('…'),
            "{first}"
        );
        assert!(out.lines().nth(2).unwrap().contains("more bytes]"));
        // Multi-byte characters are cut whole.
        let wide = "é".repeat(10_000);
        let out = logged(|| tracing::info!(wide = %wide));
        assert!(out.is_char_boundary(out.len()));
        assert!(out.len() < FIELD_BYTES + 100, "{}", out.len());
    }

    #[test]
    fn ordinary_lines_are_left_as_they_are() {
        assert_eq!(
            safe_line("INFO carmy: served 3 calls"),
            "INFO carmy: served 3 calls"
        );
        let out = logged(|| tracing::info!(calls = 3, tool = "lookup", "served"));
        assert_eq!(
            out,
            " INFO carmy::cli::logging::tests: served calls=3 tool=\"lookup\"\n"
        );
    }

    #[test]
    fn json_lines_are_objects_with_capped_fields() {
        let huge = "y".repeat(100_000);
        let out = logged_as(json::JsonLine, || {
            let span = tracing::info_span!("call", tool = "place_order");
            span.in_scope(|| {
                tracing::info!(id = "1\nforged", count = 3_u64, ok = true, "received");
                tracing::warn!(big = %huge, "cut");
            });
        });
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 2, "{out}");
        let first = &lines[0];
        assert_eq!(first["level"], "INFO");
        assert_eq!(first["fields"]["message"], "received");
        assert_eq!(first["fields"]["id"], "1\nforged");
        assert_eq!(first["fields"]["count"], 3);
        assert_eq!(first["fields"]["ok"], true);
        assert_eq!(first["spans"][0]["name"], "call");
        assert!(
            first["timestamp"]
                .as_str()
                .is_some_and(|at| at.ends_with('Z'))
        );
        let big = lines[1]["fields"]["big"].as_str().expect("text");
        assert!(big.len() <= FIELD_BYTES + '…'.len_utf8() && big.ends_with('…'));
    }

    #[test]
    fn pretty_events_span_lines_no_value_can_add() {
        let id = "1\nforged: admin logged in";
        let out = logged_as(pretty::PrettyLines { with_time: false }, || {
            tracing::info!(%id, "received");
        });
        assert!(
            out.starts_with(" INFO carmy::cli::logging::tests: received\n"),
            "{out}"
        );
        assert!(out.lines().count() > 1, "{out}");
        assert!(
            out.lines()
                .all(|line| !line.trim_start().starts_with("forged")),
            "{out}"
        );
        assert!(out.contains("1\\nforged"), "{out}");
    }
}
