//! The question put to the human: built from the tool's declared input fields, required ones
//! first, each value and the whole cut short, and a note of what was left out.

use std::io;

use carmy_core::ApprovalRequest;
use serde::Serialize;
use serde_json::{Map, Value};

/// Longest argument summary shown to the human, in characters (its first field always shows).
const SUMMARY_CHARS: usize = 300;
/// Longest single value in the summary, in characters.
const VALUE_CHARS: usize = 80;
/// Longest key in the summary, in characters (keys are data only when the schema declares none).
const KEY_CHARS: usize = 40;

/// The question put to the human: the tool, its effect, its declared arguments in short, and
/// what was left out.
pub(super) fn question(request: &ApprovalRequest<'_>) -> String {
    let tool = request.tool();
    let summary = Summary::new(request.arguments(), tool.input_schema());
    let mut message = format!(
        "Allow `{}` ({}) with {}?",
        tool.name(),
        tool.effect().as_str(),
        summary.text
    );
    if let Some(note) = summary.note() {
        message.push(' ');
        message.push_str(&note);
    }
    message
}

/// Any value: the schema of what a schema does not describe.
static ANY: Value = Value::Bool(true);

/// The arguments as the human reads them: `{order_id: "ord-1001", reason: "…"}`.
///
/// Only the fields the input schema declares are shown, those it requires first (in the order
/// of its `required`, which is the declaration order), then the others (in the order of its
/// `properties`, alphabetical with serde_json's default map); nested objects likewise. Each
/// value and the whole are cut short, and the note counts what was left out, so no key the
/// tool does not declare can push its target out of the question. A schema that declares no
/// `properties` (a map) declares every key.
#[derive(Debug, Default)]
struct Summary {
    text: String,
    /// Keys the schema does not declare, at the top and in the objects shown.
    undeclared: usize,
    /// Declared fields with a value that did not fit.
    cut: usize,
}

impl Summary {
    fn new(arguments: &Value, schema: &Value) -> Self {
        let mut summary = Self::default();
        let Value::Object(object) = arguments else {
            summary.text = render(arguments, schema, SUMMARY_CHARS, &mut summary.undeclared);
            return summary;
        };
        let (fields, undeclared) = members(object, schema);
        summary.undeclared = undeclared;
        if fields.is_empty() {
            summary.text = "no arguments".to_owned();
            return summary;
        }
        let mut text = String::from("{");
        let mut chars = 1;
        for (index, &(name, value, field_schema)) in fields.iter().enumerate() {
            let mut undeclared = 0;
            let mut piece = render_key(name);
            piece.push_str(": ");
            piece.push_str(&render(value, field_schema, VALUE_CHARS, &mut undeclared));
            let piece_chars = piece.chars().count();
            // The first field always shows: it is the target when the schema requires one.
            if index > 0 && chars + 2 + piece_chars + 1 > SUMMARY_CHARS {
                summary.cut = fields.len() - index;
                break;
            }
            if index > 0 {
                text.push_str(", ");
                chars += 2;
            }
            text.push_str(&piece);
            chars += piece_chars;
            summary.undeclared += undeclared;
        }
        text.push('}');
        summary.text = text;
        summary
    }

    /// What was left out, said plainly; `None` when nothing was.
    fn note(&self) -> Option<String> {
        let cut = match self.cut {
            0 => None,
            1 => Some("1 more field (too long to show)".to_owned()),
            n => Some(format!("{n} more fields (too long to show)")),
        };
        let undeclared = match self.undeclared {
            0 => None,
            1 => Some("1 key the tool does not declare".to_owned()),
            n => Some(format!("{n} keys the tool does not declare")),
        };
        match (cut, undeclared) {
            (None, None) => None,
            (Some(only), None) | (None, Some(only)) => Some(format!("Not shown: {only}.")),
            (Some(cut), Some(undeclared)) => Some(format!("Not shown: {cut}, and {undeclared}.")),
        }
    }
}

/// The members of `object` to show, in order, each with its schema: those `schema` requires,
/// then the other properties it declares; and how many keys it does not declare.
fn members<'a>(
    object: &'a Map<String, Value>,
    schema: &'a Value,
) -> (Vec<(&'a str, &'a Value, &'a Value)>, usize) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        // A map (or a schema without named fields): every key is data.
        let values = schema
            .get("additionalProperties")
            .filter(|values| values.is_object())
            .unwrap_or(&ANY);
        let all = object
            .iter()
            .map(|(name, value)| (name.as_str(), value, values))
            .collect();
        return (all, 0);
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut shown: Vec<(&str, &Value, &Value)> = Vec::new();
    for name in &required {
        if let Some((name, value)) = object.get_key_value(*name)
            && !shown.iter().any(|(seen, ..)| seen == name)
        {
            shown.push((name, value, properties.get(name).unwrap_or(&ANY)));
        }
    }
    for (name, field_schema) in properties {
        if let Some(value) = object.get(name)
            && !required.contains(&name.as_str())
        {
            shown.push((name, value, field_schema));
        }
    }
    let undeclared = object
        .keys()
        .filter(|name| !properties.contains_key(*name) && !required.contains(&name.as_str()))
        .count();
    (shown, undeclared)
}

/// A top-level key: as written when it is a plain name (`order_id`), else as a JSON string, so
/// that no key brings a line break or quotes of its own into the question.
fn render_key(name: &str) -> String {
    let mut out = Excerpt::new(KEY_CHARS);
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        out.push(name);
    } else {
        out.push_json(name);
    }
    out.text
}

/// `value` as JSON in at most `max` characters: an object shows the members its schema
/// declares (and counts the others in `undeclared`), every string is escaped, and what does
/// not fit ends in `…`. Stops as soon as it is full, however large `value` is.
fn render(value: &Value, schema: &Value, max: usize, undeclared: &mut usize) -> String {
    let mut out = Excerpt::new(max);
    write_value(&mut out, value, schema, undeclared);
    out.text
}

fn write_value(out: &mut Excerpt, value: &Value, schema: &Value, undeclared: &mut usize) {
    match value {
        Value::Object(object) => {
            let (members, hidden) = members(object, schema);
            *undeclared += hidden;
            out.push("{");
            for (index, (name, member, member_schema)) in members.into_iter().enumerate() {
                if out.is_full() {
                    return;
                }
                if index > 0 {
                    out.push(",");
                }
                out.push_json(&name);
                out.push(":");
                write_value(out, member, member_schema, undeclared);
            }
            out.push("}");
        }
        Value::Array(items) => {
            let item_schema = schema
                .get("items")
                .filter(|items| items.is_object())
                .unwrap_or(&ANY);
            out.push("[");
            for (index, item) in items.iter().enumerate() {
                if out.is_full() {
                    return;
                }
                if index > 0 {
                    out.push(",");
                }
                write_value(out, item, item_schema, undeclared);
            }
            out.push("]");
        }
        leaf => out.push_json(leaf),
    }
}

/// Text of at most `max` characters; past it, the last one is `…` and nothing more is taken.
struct Excerpt {
    text: String,
    chars: usize,
    max: usize,
    full: bool,
}

impl Excerpt {
    fn new(max: usize) -> Self {
        Self {
            text: String::new(),
            chars: 0,
            max,
            full: false,
        }
    }

    fn is_full(&self) -> bool {
        self.full
    }

    fn push(&mut self, text: &str) {
        for c in text.chars() {
            if self.full {
                return;
            }
            if self.chars == self.max {
                self.text.pop();
                self.text.push('…');
                self.full = true;
                return;
            }
            self.text.push(c);
            self.chars += 1;
        }
    }

    /// `value` serialized, until full: serialization stops at the first write past the end.
    fn push_json<T: Serialize + ?Sized>(&mut self, value: &T) {
        let _ = serde_json::to_writer(ExcerptWriter(self), value);
    }
}

/// serde_json's writer into an [`Excerpt`]; it fails once the excerpt is full, which stops the
/// serialization.
struct ExcerptWriter<'a>(&'a mut Excerpt);

impl io::Write for ExcerptWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.0.full {
            return Err(io::Error::other("the excerpt is full"));
        }
        // serde_json writes whole characters; lossy is only a guard.
        self.0.push(&String::from_utf8_lossy(bytes));
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(arguments: &Value, schema: &Value) -> String {
        let summary = Summary::new(arguments, schema);
        match summary.note() {
            Some(note) => format!("{} {note}", summary.text),
            None => summary.text,
        }
    }

    fn cancel_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "order_id": { "type": "string" },
                "reason": { "type": "string" }
            },
            "required": ["order_id"]
        })
    }

    #[test]
    fn summaries_are_short_and_readable() {
        let schema = cancel_schema();
        assert_eq!(
            summary(
                &json!({ "order_id": "ord-1001", "reason": "changed my mind" }),
                &schema
            ),
            r#"{order_id: "ord-1001", reason: "changed my mind"}"#
        );
        assert_eq!(summary(&json!({}), &schema), "no arguments");
        let long = summary(&json!({ "order_id": "x".repeat(1000) }), &schema);
        assert_eq!(
            long.chars().count(),
            "{order_id: }".len() + VALUE_CHARS,
            "{long}"
        );
        assert!(long.ends_with("…}"), "{long}");
        // A map declares every key; they are cut short all the same.
        let many: Map<String, Value> = (0..100).map(|i| (format!("field_{i}"), json!(i))).collect();
        let many = summary(&Value::Object(many), &json!({ "type": "object" }));
        assert!(many.chars().count() <= SUMMARY_CHARS + 60, "{many}");
        assert!(many.contains("} Not shown: "), "{many}");
        assert!(many.ends_with(" more fields (too long to show)."), "{many}");
    }

    #[test]
    fn the_target_shows_whatever_keys_are_added() {
        let mut arguments = json!({ "reason": "r".repeat(1000), "order_id": "ord-1001" });
        for n in 0..40 {
            arguments[format!("a{n:02}")] = json!("x".repeat(100));
        }
        let shown = summary(&arguments, &cancel_schema());
        assert!(
            shown.starts_with(r#"{order_id: "ord-1001", reason: "rrr"#),
            "{shown}"
        );
        assert!(
            shown.ends_with("…} Not shown: 40 keys the tool does not declare."),
            "{shown}"
        );
        assert!(!shown.contains("a00"), "{shown}");
        // One undeclared key, said as one.
        let one = summary(&json!({ "order_id": "o", "x": 1 }), &cancel_schema());
        assert_eq!(
            one,
            r#"{order_id: "o"} Not shown: 1 key the tool does not declare."#
        );
    }

    #[test]
    fn required_fields_come_first_in_declared_order_then_the_others() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a_note": { "type": "string" },
                "to": { "type": "string" },
                "amount": { "type": "integer" }
            },
            "required": ["to", "amount"]
        });
        assert_eq!(
            summary(
                &json!({ "a_note": "n", "amount": 5, "to": "acct-1" }),
                &schema
            ),
            r#"{to: "acct-1", amount: 5, a_note: "n"}"#
        );
    }

    #[test]
    fn nested_objects_show_their_declared_members_first() {
        let schema = json!({
            "type": "object",
            "properties": {
                "to": {
                    "type": "object",
                    "properties": { "account": { "type": "string" }, "memo": { "type": "string" } },
                    "required": ["account"]
                },
                "lines": {
                    "type": "array",
                    "items": { "type": "object", "properties": { "sku": { "type": "string" } } }
                }
            },
            "required": ["to"]
        });
        let arguments = json!({
            "to": { "aaaa": "x".repeat(200), "account": "acct-9", "memo": "m" },
            "lines": [{ "sku": "s1", "zz": 1 }]
        });
        assert_eq!(
            summary(&arguments, &schema),
            r#"{to: {"account":"acct-9","memo":"m"}, lines: [{"sku":"s1"}]} Not shown: 2 keys the tool does not declare."#
        );
    }

    #[test]
    fn rendering_stops_at_its_bound_however_large_the_value() {
        let huge = json!({ "order_id": "o", "reason": "é".repeat(4_000_000) });
        let shown = summary(&huge, &cancel_schema());
        assert!(shown.chars().count() < 120, "{shown}");
        // A huge key of a map is cut too, and strings stay escaped.
        let key = format!("{}\n", "k".repeat(1_000_000));
        let map = json!({ key: "line\nbreak" });
        let shown = summary(&map, &json!({ "type": "object" }));
        assert!(shown.chars().count() < 60, "{shown}");
        assert!(!shown.contains('\n'), "{shown}");
        assert!(summary(&json!({ "t": "a\nb" }), &json!({})).contains(r#""a\nb""#));
    }
}
