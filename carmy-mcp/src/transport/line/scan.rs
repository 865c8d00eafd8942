//! A small scanner over the raw bytes of a line that did not parse (or was cut short): where
//! its `id` is, and how deep it nests. It never builds a value, so hostile input costs one pass.

use serde_json::Value;

/// The `id` member of the JSON object that `head` starts with, when it is a string or a number
/// and appears before the head is cut off; `null` otherwise.
pub(super) fn leading_id(head: &[u8]) -> Value {
    scan_leading_id(head).unwrap_or(Value::Null)
}

fn scan_leading_id(head: &[u8]) -> Option<Value> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let mut at = skip_ws(head, 0);
    if head.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_ws(head, at);
        let key_end = skip_string(head, at)?;
        let is_id = &head[at..key_end] == b"\"id\"";
        at = skip_ws(head, key_end);
        if head.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(head, at + 1);
        let value_end = skip_value(head, at)?;
        if is_id {
            let id: Value = serde_json::from_slice(&head[at..value_end]).ok()?;
            return (id.is_string() || id.is_number()).then_some(id);
        }
        at = skip_ws(head, value_end);
        match head.get(at) {
            Some(b',') => at += 1,
            _ => return None,
        }
    }
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The index after the string starting at `at`, if it is complete.
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index after the value starting at `at`, if it is complete.
fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => skip_string(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = skip_string(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            Some(at + len)
        }
    }
}

/// Whether `bytes` nest arrays and objects deeper than `max` anywhere (brackets inside strings
/// do not count). Used on a line serde_json refused, to say why without trusting its wording.
pub(super) fn nests_deeper_than(bytes: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => match skip_string(bytes, at) {
                Some(end) => {
                    at = end;
                    continue;
                }
                None => return false,
            },
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_id_at_the_start_of_a_cut_line() {
        let head =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"text":"aaaa"#;
        assert_eq!(leading_id(head), json!(7));
        let head = br#" {"id" : "req-1", "params": {"#;
        assert_eq!(leading_id(head), json!("req-1"));
        let head = br#"{"method":"x","params":{"id":3,"nested":[1,{"id":4}]},"id":"late"}"#;
        assert_eq!(leading_id(head), json!("late"));
    }

    #[test]
    fn gives_up_on_ids_it_cannot_see() {
        assert_eq!(
            leading_id(br#"{"method":"tools/call","params":{"a":"xx"#),
            Value::Null
        );
        assert_eq!(leading_id(br#"{"id":{"x":1}}"#), Value::Null);
        assert_eq!(leading_id(br#"{"id":nul"#), Value::Null);
        assert_eq!(leading_id(b"not json"), Value::Null);
        assert_eq!(leading_id(br#"{"a\"id":1,"#), Value::Null);
    }

    #[test]
    fn measures_nesting_outside_strings_only() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(nests_deeper_than(deep.as_bytes(), 128));
        assert!(!nests_deeper_than(deep.as_bytes(), 200));
        let quoted = format!(r#"{{"a":"{}"}}"#, "[".repeat(500));
        assert!(!nests_deeper_than(quoted.as_bytes(), 128));
        let escaped = format!(r#"{{"a":"\"{}"}}"#, "{".repeat(500));
        assert!(!nests_deeper_than(escaped.as_bytes(), 128));
        // serde_json's own limit: 127 levels parse, 128 do not.
        let nested = |depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(serde_json::from_str::<Value>(&nested(127)).is_ok());
        assert!(serde_json::from_str::<Value>(&nested(128)).is_err());
        assert!(!nests_deeper_than(nested(127).as_bytes(), 127));
        assert!(nests_deeper_than(nested(128).as_bytes(), 127));
        assert_eq!(leading_id(br#"{"id":5}"#), json!(5));
    }
}
