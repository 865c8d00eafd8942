//! `logging.format = "pretty"`: an event over several lines, for reading at a terminal.
//!
//! ```text
//! 2026-12-02T17:50:00.123456Z  INFO shop::orders: order placed
//!     order_id: "ord-1"
//!     in call with tool="place_order"
//!     at examples/shop/src/orders.rs:42
//! ```
//!
//! tracing-subscriber's own `pretty` writes field values as they are, so a value holding a
//! newline would start a line of its choosing: here every value is cut at [`FIELD_BYTES`](super::FIELD_BYTES) and
//! its control characters escaped, as in the one-line formats, and the only line breaks are the
//! formatter's.

use std::fmt;

use tracing::{Event, Subscriber, field::Field};
use tracing_subscriber::{
    field::Visit,
    fmt::{
        FmtContext, FormatEvent, FormatFields, FormattedFields,
        format::Writer,
        time::{FormatTime, SystemTime},
    },
    registry::LookupSpan,
};

use super::{Escaping, safe_line, write_capped};

/// The pretty event formatter; `with_time(false)` leaves the timestamp out (for tests).
#[derive(Debug)]
pub(in crate::cli) struct PrettyLines {
    pub(in crate::cli) with_time: bool,
}

impl<S, N> FormatEvent<S, N> for PrettyLines
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
    N: for<'writer> FormatFields<'writer> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let metadata = event.metadata();
        if self.with_time {
            SystemTime.format_time(&mut writer)?;
            writer.write_char(' ')?;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        writeln!(
            writer,
            "{:>5} {}: {}",
            metadata.level(),
            metadata.target(),
            fields.message
        )?;
        for (name, value) in &fields.others {
            writeln!(writer, "    {name}: {value}")?;
        }
        for span in ctx.event_scope().into_iter().flatten() {
            let extensions = span.extensions();
            match extensions.get::<FormattedFields<N>>() {
                // Formatted by the (capping, escaping) field formatter; cut again for the line.
                Some(formatted) if !formatted.is_empty() => writeln!(
                    writer,
                    "    in {} with {}",
                    span.name(),
                    safe_line(formatted.as_str())
                )?,
                _ => writeln!(writer, "    in {}", span.name())?,
            }
        }
        if let (Some(file), Some(line)) = (metadata.file(), metadata.line()) {
            writeln!(writer, "    at {file}:{line}")?;
        }
        Ok(())
    }
}

/// An event's message and other fields, each cut and escaped.
#[derive(Default)]
struct Fields {
    message: String,
    others: Vec<(&'static str, String)>,
}

impl Fields {
    fn record(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        let mut text = String::new();
        // Writing to a string fails only where the value was cut, which is marked.
        let _ = write_capped(&mut Escaping(&mut text), value);
        match field.name() {
            "message" => self.message = text,
            name => self
                .others
                .push((name.strip_prefix("r#").unwrap_or(name), text)),
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.record(field, format_args!("{value}"));
        } else {
            self.record(field, format_args!("{value:?}"));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.record(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.record(field, format_args!("{value:?}"));
    }
}
