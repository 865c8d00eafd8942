//! `Mcp-Param-*` headers (SEP-2243, 2026-07-28): a tool may mark an argument with
//! `"x-mcp-header": "Name"` in its input schema, so that proxies and gateways can route on it
//! without reading bodies; the client then repeats the argument in `Mcp-Param-Name`, as is or
//! as `=?base64?...?=`. The header is only worth trusting if the server checks it: a request
//! whose header is missing, malformed, or differs from the body is refused `400` with
//! `-32020` (header mismatch) before anything runs.

use std::collections::HashMap;

use base64::Engine as _;
use carmy_core::Catalog;
use http::HeaderMap;
use serde_json::Value;

/// The header-bound arguments of each tool that has any: `(argument, header name)`.
#[derive(Debug, Default)]
pub(super) struct HeaderParams(HashMap<String, Vec<(String, String)>>);

impl HeaderParams {
    /// Reads the `x-mcp-header` marks of the catalog's input schemas, once.
    pub(super) fn of(catalog: &Catalog) -> Self {
        let mut bound = HashMap::new();
        for entry in catalog.iter() {
            let Some(properties) = entry
                .input_schema()
                .get("properties")
                .and_then(Value::as_object)
            else {
                continue;
            };
            let params: Vec<(String, String)> = properties
                .iter()
                .filter_map(|(argument, schema)| {
                    let header = schema.get("x-mcp-header")?.as_str()?;
                    Some((argument.clone(), header.to_owned()))
                })
                .collect();
            if !params.is_empty() {
                bound.insert(entry.name().to_owned(), params);
            }
        }
        Self(bound)
    }

    /// The `Mcp-Param-*` header names the tools bind, each once (for CORS to allow them).
    pub(super) fn header_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .values()
            .flatten()
            .map(|(_, header)| format!("mcp-param-{}", header.to_ascii_lowercase()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Whether no tool binds an argument to a header (nothing to check, ever).
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks the `Mcp-Param-*` headers of a `tools/call` body against its arguments; the
    /// reason it does not hold, if not.
    pub(super) fn check(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), String> {
        let Ok(message) = serde_json::from_slice::<Value>(body) else {
            return Ok(()); // Not ours to judge: rmcp answers a body it cannot read.
        };
        let params = &message["params"];
        let Some(bound) = params["name"].as_str().and_then(|name| self.0.get(name)) else {
            return Ok(());
        };
        for (argument, header) in bound {
            let name = format!("Mcp-Param-{header}");
            let sent = headers.get(name.as_str());
            let value = &params["arguments"][argument];
            match (sent, value) {
                (None, Value::Null) => {}
                (None, _) => return Err(format!("`{name}` is missing; the body has `{argument}`")),
                (Some(sent), value) => {
                    let sent = sent
                        .to_str()
                        .map_err(|_| format!("`{name}` is not visible ASCII"))?;
                    let sent = decode(sent).map_err(|reason| format!("`{name}`: {reason}"))?;
                    if Some(sent.as_str()) != as_header(value).as_deref() {
                        return Err(format!("`{name}` differs from the body's `{argument}`"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A header value as the client meant it: `=?base64?...?=` decoded (strictly: standard
/// alphabet, padded), anything else literal.
fn decode(sent: &str) -> Result<String, &'static str> {
    let Some(encoded) = sent
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(sent.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| "invalid base64")?;
    String::from_utf8(bytes).map_err(|_| "base64 of something that is not UTF-8")
}

/// An argument as its header carries it: strings as they are, numbers and booleans as JSON
/// writes them; nothing else can be carried.
fn as_header(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn params() -> HeaderParams {
        HeaderParams(HashMap::from([(
            "route".to_owned(),
            vec![("region".to_owned(), "Region".to_owned())],
        )]))
    }

    fn check(header: Option<&str>, region: Value) -> Result<(), String> {
        let mut headers = HeaderMap::new();
        if let Some(header) = header {
            headers.insert("Mcp-Param-Region", HeaderValue::from_str(header).unwrap());
        }
        let body = json!({ "params": { "name": "route", "arguments": { "region": region } } });
        params().check(&headers, body.to_string().as_bytes())
    }

    #[test]
    fn headers_must_say_what_the_body_says() {
        assert!(check(Some("eu-west"), json!("eu-west")).is_ok());
        assert!(check(Some("=?base64?SGVsbG8=?="), json!("Hello")).is_ok());
        // Without the whole wrapper, a value is literal.
        assert!(check(Some("SGVsbG8="), json!("SGVsbG8=")).is_ok());
        assert!(check(Some("=?base64?SGVsbG8="), json!("=?base64?SGVsbG8=")).is_ok());
        assert!(check(Some("7"), json!(7)).is_ok());
        assert!(check(None, Value::Null).is_ok(), "absent from both");

        assert!(check(Some("us-east"), json!("eu-west")).is_err());
        assert!(check(None, json!("eu-west")).is_err(), "missing header");
        assert!(
            check(Some("=?base64?SGVsbG8?="), json!("Hello")).is_err(),
            "unpadded"
        );
        assert!(
            check(Some("=?base64?SGVs!!!bG8=?="), json!("Hello")).is_err(),
            "not base64"
        );
        assert!(
            check(Some("x"), Value::Null).is_err(),
            "header without the argument"
        );
    }

    #[test]
    fn other_tools_and_unreadable_bodies_are_not_checked() {
        let other = json!({ "params": { "name": "other", "arguments": {} } });
        assert!(
            params()
                .check(&HeaderMap::new(), other.to_string().as_bytes())
                .is_ok()
        );
        assert!(params().check(&HeaderMap::new(), b"{").is_ok());
    }
}
