//! `logging.format = "json"`: one JSON object per line, for log collectors.
//!
//! Written here rather than with tracing-subscriber's `json` feature so that the guarantees of
//! the text formats hold: every field is cut at [`FIELD_BYTES`](super::FIELD_BYTES) while it is formatted (a huge
//! value costs nothing past the cap), and a line is always valid JSON (JSON's own escaping keeps
//! a value from starting a line). The object: `timestamp` (RFC 3339, UTC), `level`, `target`,
//! `fields` (the message among them), and `spans`, outermost first, each with its `name` and
//! its fields as formatted text.

use std::fmt;

use serde_json::{Map, Value};
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

use super::write_capped;

/// The JSON event formatter.
#[derive(Debug, Default)]
pub(in crate::cli) struct JsonLine;

impl<S, N> FormatEvent<S, N> for JsonLine
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
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let metadata = event.metadata();
        let mut fields = JsonFields(Map::new());
        event.record(&mut fields);
        let spans: Vec<Value> = ctx
            .event_scope()
            .into_iter()
            .flat_map(|scope| scope.from_root())
            .map(|span| {
                let mut entry = Map::new();
                entry.insert("name".into(), span.name().into());
                let extensions = span.extensions();
                if let Some(formatted) = extensions.get::<FormattedFields<N>>()
                    && !formatted.is_empty()
                {
                    entry.insert("fields".into(), formatted.as_str().into());
                }
                Value::Object(entry)
            })
            .collect();
        // Written key by key: in this order, whatever order a JSON map keeps.
        let json = |value: &Value| serde_json::to_string(value).map_err(|_| fmt::Error);
        write!(
            writer,
            "{{\"timestamp\":{},\"level\":{},\"target\":{},\"fields\":{}",
            json(&timestamp.into())?,
            json(&metadata.level().as_str().into())?,
            json(&metadata.target().into())?,
            json(&Value::Object(fields.0))?,
        )?;
        if !spans.is_empty() {
            write!(writer, ",\"spans\":{}", json(&spans.into())?)?;
        }
        writer.write_str("}\n")
    }
}

/// An event's fields as JSON values: numbers and booleans as themselves, the rest as text cut
/// at [`FIELD_BYTES`](super::FIELD_BYTES).
struct JsonFields(Map<String, Value>);

impl JsonFields {
    fn text(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        let mut text = String::new();
        // Writing to a string fails only where the value was cut, which is marked.
        let _ = write_capped(&mut text, value);
        self.insert(field, text.into());
    }

    fn insert(&mut self, field: &Field, value: Value) {
        let name = field.name();
        self.0
            .insert(name.strip_prefix("r#").unwrap_or(name).to_owned(), value);
    }
}

impl Visit for JsonFields {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.insert(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.insert(field, value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.insert(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.insert(field, value.into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.text(field, format_args!("{value}"));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.text(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.text(field, format_args!("{value:?}"));
    }
}
