//! The fingerprint of a call: what makes two calls with one request id the same call.

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// What a call is: the tool and its canonical arguments, hashed. The same request id with another
/// fingerprint is a different call, and a conflict.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// SHA-256 of the tool name and the arguments in canonical JSON (object keys sorted, no
    /// whitespace), so key order and formatting never make two equal calls differ.
    pub fn of(tool: &str, arguments: &Value) -> Self {
        let mut canonical = String::with_capacity(64);
        write_canonical(arguments, &mut canonical);
        let mut hasher = Sha256::new();
        hasher.update((tool.len() as u64).to_le_bytes());
        hasher.update(tool.as_bytes());
        hasher.update(canonical.as_bytes());
        Self(hasher.finalize().into())
    }

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A fingerprint read back from where a store kept [`as_bytes`](Self::as_bytes).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(&self.0[..8]))?;
        f.write_str("…")
    }
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (name, member)) in sorted.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                write_canonical(member, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // -0.0 and 0.0 are equal JSON values (and equal numbers); one call, one fingerprint.
        Value::Number(number) if number.as_f64() == Some(0.0) && number.is_f64() => {
            out.push_str("0.0");
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fingerprint_ignores_key_order_and_whitespace() {
        let a = Fingerprint::of("t", &json!({ "a": 1, "b": { "x": [1, 2], "y": "s" } }));
        let b: Value = serde_json::from_str(r#"{ "b": {"y":"s","x":[1,2]}, "a":1 }"#).unwrap();
        assert_eq!(a, Fingerprint::of("t", &b));
        assert_ne!(a, Fingerprint::of("u", &b));
        assert_ne!(
            Fingerprint::of("t", &json!({ "a": 1 })),
            Fingerprint::of("t", &json!({ "a": 2 }))
        );
        // Found by the `fingerprint` fuzz target: equal values, one fingerprint.
        assert_eq!(
            Fingerprint::of("t", &json!({ "x": -0.0 })),
            Fingerprint::of("t", &json!({ "x": 0.0 }))
        );
        assert_ne!(
            Fingerprint::of("t", &json!({ "x": 0.0 })),
            Fingerprint::of("t", &json!({ "x": 0 }))
        );
        // A tool name cannot bleed into the arguments.
        assert_ne!(
            Fingerprint::of("ab", &json!("c")),
            Fingerprint::of("a", &json!("bc"))
        );
    }
}
