//! Request ids exactly as the client wrote them.
//!
//! rmcp reads an id into its `RequestId` (`i64` or string), which forgets how it was written:
//! `7.0` and `7e0` become `7`, and its answer matching also takes `"7"` for `7`. Two ids that
//! JSON-RPC tells apart must stay apart, or a cancel naming `7.0` stops request `7`, and a
//! client's answer with id `"0"` is taken for its answer to the server's request `0`. So the
//! transport keeps each id as written ([`ClientId`]: the raw JSON to echo, and a key that is
//! equal exactly when the two JSON values are), and hands rmcp ids of its own (see `flow.rs`).
//!
//! Reading the ids of a line is the one parse the transport adds to rmcp's: the `id` of a
//! message, and the `requestId` a `notifications/cancelled` names.

use rmcp::model::RequestId;
use serde::Deserialize;
use serde_json::{Value, value::RawValue};

/// The longest part of an id written into a log line.
const LOG_ID_CHARS: usize = 64;

/// A request id as the client wrote it.
#[derive(Clone, Debug)]
pub(super) struct ClientId {
    /// The JSON the client sent, echoed as is in the answer.
    raw: Box<RawValue>,
    key: IdKey,
}

/// Equal exactly when two ids are equal JSON values: a string is never a number, an integer
/// never a number written with a fraction or an exponent (`7` is not `7.0`), and numbers
/// written with one are compared as the `f64` they are.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum IdKey {
    Int(i128),
    /// The bits of the `f64`, `-0.0` counted as `0.0` (they are equal numbers).
    Float(u64),
    Str(Box<str>),
}

impl ClientId {
    /// The id in `raw`, when it is one rmcp accepts (a string, or an integer that fits `i64`,
    /// possibly written as `7.0`).
    pub(super) fn new(raw: &RawValue) -> Option<Self> {
        let value: Value = serde_json::from_str(raw.get()).ok()?;
        RequestId::deserialize(&value).ok()?;
        let key = IdKey::of(&value)?;
        Some(Self {
            raw: raw.to_owned(),
            key,
        })
    }

    pub(super) fn key(&self) -> &IdKey {
        &self.key
    }

    pub(super) fn raw(&self) -> &RawValue {
        &self.raw
    }

    /// The id as a JSON value, for an error answer built as one.
    pub(super) fn value(&self) -> Value {
        serde_json::from_str(self.raw.get()).unwrap_or(Value::Null)
    }

    /// The id for a log line: its JSON (where control characters are escaped), cut short.
    pub(super) fn for_log(&self) -> String {
        cut(self.raw.get(), LOG_ID_CHARS)
    }
}

impl IdKey {
    fn of(value: &Value) -> Option<Self> {
        match value {
            Value::String(text) => Some(Self::Str(text.as_str().into())),
            Value::Number(number) => Some(if let Some(n) = number.as_u64() {
                Self::Int(i128::from(n))
            } else if let Some(n) = number.as_i64() {
                Self::Int(i128::from(n))
            } else {
                let n = number.as_f64()?;
                Self::Float(if n == 0.0 { 0 } else { n.to_bits() })
            }),
            _ => None,
        }
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub(super) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The ids of one line that rmcp parsed: its `id`, and what a cancellation names.
#[derive(Debug, Default)]
pub(super) struct LineIds {
    /// `None` when the line has no `id` or a `null` one.
    pub(super) id: Option<ClientId>,
    /// `params.requestId`, read only for `notifications/cancelled`.
    pub(super) cancels: Option<ClientId>,
}

/// The envelope of a message, everything but the ids left unparsed.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CancelParams<'a> {
    #[serde(rename = "requestId", borrow, default)]
    request_id: Option<&'a RawValue>,
}

/// The ids of `line`, a message rmcp parsed (a cancellation when `cancellation`). `None` when
/// they cannot be read as rmcp read them: the line is then refused rather than guessed at.
pub(super) fn line_ids(line: &[u8], cancellation: bool) -> Option<LineIds> {
    let envelope: Envelope<'_> = serde_json::from_slice(line).ok()?;
    let id = match envelope.id {
        Some(raw) => Some(ClientId::new(raw)?),
        None => None,
    };
    let cancels = match envelope.params {
        Some(params) if cancellation => {
            let params: CancelParams<'_> = serde_json::from_str(params.get()).ok()?;
            match params.request_id {
                Some(raw) => Some(ClientId::new(raw)?),
                None => None,
            }
        }
        _ => None,
    };
    Some(LineIds { id, cancels })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(json: &str) -> Option<ClientId> {
        ClientId::new(&RawValue::from_string(json.to_owned()).unwrap())
    }

    fn key(json: &str) -> IdKey {
        id(json).unwrap().key
    }

    #[test]
    fn ids_are_equal_exactly_when_their_json_values_are() {
        assert_eq!(key("7"), key("7"));
        assert_eq!(key("\"a\""), key("\"\\u0061\""));
        assert_eq!(key("7.0"), key("7e0"));
        assert_eq!(key("7.0"), key("70e-1"));
        assert_eq!(key("0.0"), key("-0.0"));
        assert_eq!(key("-3"), key("-3"));
        for (a, b) in [
            ("7", "7.0"),
            ("7", "\"7\""),
            ("0", "0.0"),
            ("0", "\"0\""),
            ("-3", "-3.0"),
            ("\"a\"", "\"A\""),
        ] {
            assert_ne!(key(a), key(b), "{a} and {b}");
        }
        // The keys agree with serde_json's equality of values.
        for (a, b) in [("7", "7.0"), ("0.0", "-0.0"), ("1e2", "100.0"), ("5", "5")] {
            let (va, vb): (Value, Value) = (
                serde_json::from_str(a).unwrap(),
                serde_json::from_str(b).unwrap(),
            );
            assert_eq!(va == vb, key(a) == key(b), "{a} and {b}");
        }
    }

    #[test]
    fn only_ids_rmcp_accepts_are_ids() {
        for accepted in ["0", "-1", "9223372036854775807", "7.0", "\"\"", "\"x\\ny\""] {
            assert!(id(accepted).is_some(), "{accepted}");
        }
        for refused in ["null", "1.5", "18446744073709551615", "{}", "[]", "true"] {
            assert!(id(refused).is_none(), "{refused}");
        }
    }

    #[test]
    fn reads_the_ids_of_a_line_as_written() {
        let ids = line_ids(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7.0}}"#,
            true,
        )
        .unwrap();
        assert!(ids.id.is_none());
        assert_eq!(ids.cancels.unwrap().raw().get(), "7.0");
        let ids = line_ids(br#"{"jsonrpc":"2.0","id":"a\nb","method":"ping"}"#, false).unwrap();
        let id = ids.id.unwrap();
        assert_eq!(id.raw().get(), r#""a\nb""#);
        assert_eq!(id.for_log(), r#""a\nb""#);
        assert!(line_ids(br#"{"id":1,"id":2}"#, false).is_none());
        assert!(line_ids(br#"{"id":1.5}"#, false).is_none());
        assert_eq!(cut("abcdef", 3), "abc…");
        assert_eq!(cut("abc", 3), "abc");
    }
}
