//! The correctness check: a server cannot win by failing fast.

use serde_json::Value;

/// The arguments every measured call sends.
pub(crate) const ARGUMENTS: &str = r#"{"query":"mouse"}"#;

/// How many products the catalog has for `mouse`.
pub(crate) const EXPECTED: usize = 4;

/// Checks a `tools/call` result for `search_products {"query":"mouse"}`: not an error, and
/// exactly 4 products (and `total` 4) in `structuredContent`, or else in the JSON text block.
pub(crate) fn search_result(result: &Value) -> Result<(), String> {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(format!("the tool answered isError: {result}"));
    }
    let from_text;
    let output = match result.get("structuredContent") {
        Some(structured) => structured,
        None => {
            let text = result
                .get("content")
                .and_then(|c| c.get(0))
                .and_then(|c| c.get("text"))
                .and_then(Value::as_str)
                .ok_or("no structuredContent and no text content")?;
            from_text = serde_json::from_str::<Value>(text)
                .map_err(|e| format!("the text content is not JSON: {e}"))?;
            &from_text
        }
    };
    let products = output
        .get("products")
        .and_then(Value::as_array)
        .ok_or("no `products` array")?;
    if products.len() != EXPECTED {
        return Err(format!(
            "{} products for `mouse`, expected {EXPECTED}",
            products.len()
        ));
    }
    if output.get("total").and_then(Value::as_u64) != Some(EXPECTED as u64) {
        return Err(format!(
            "`total` is {:?}, expected {EXPECTED}",
            output.get("total")
        ));
    }
    Ok(())
}

/// Checks a `resources/read` result of `uri`: contents, the first of them for `uri`, with text
/// or a blob that is not empty.
pub(crate) fn read_result(result: &Value, uri: &str) -> Result<(), String> {
    let first = result
        .get("contents")
        .and_then(Value::as_array)
        .and_then(|contents| contents.first())
        .ok_or("no contents")?;
    if first.get("uri").and_then(Value::as_str) != Some(uri) {
        return Err(format!(
            "contents of {:?}, expected {uri}",
            first.get("uri")
        ));
    }
    let body = first
        .get("text")
        .or_else(|| first.get("blob"))
        .and_then(Value::as_str);
    match body {
        Some(body) if !body.is_empty() => Ok(()),
        _ => Err(format!("no text and no blob for {uri}")),
    }
}

/// Checks a `tools/list` result names `search_products`.
pub(crate) fn tool_list(result: &Value) -> Result<(), String> {
    let listed = result
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| {
            tools
                .iter()
                .any(|t| t.get("name").and_then(Value::as_str) == Some("search_products"))
        });
    if listed {
        Ok(())
    } else {
        Err("tools/list does not list `search_products`".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn products(n: usize) -> Value {
        json!({ "products": vec![json!({"id": "x"}); n], "total": n })
    }

    #[test]
    fn a_read_answers_the_uri_asked_with_a_body() {
        let uri = "shop://catalog";
        let read = |contents: Value| read_result(&json!({ "contents": contents }), uri);
        assert!(read(json!([{ "uri": uri, "text": "[]" }])).is_ok());
        assert!(read(json!([{ "uri": uri, "blob": "AA==" }])).is_ok());
        assert!(read(json!([{ "uri": "shop://other", "text": "[]" }])).is_err());
        assert!(read(json!([{ "uri": uri, "text": "" }])).is_err());
        assert!(read(json!([])).is_err());
        assert!(read_result(&json!({}), uri).is_err());
    }

    #[test]
    fn structured_content_is_preferred_and_text_is_a_fallback() {
        assert!(search_result(&json!({ "structuredContent": products(4) })).is_ok());
        let text = products(4).to_string();
        assert!(search_result(&json!({ "content": [{ "type": "text", "text": text }] })).is_ok());
    }

    #[test]
    fn wrong_answers_fail() {
        assert!(search_result(&json!({ "structuredContent": products(3) })).is_err());
        assert!(
            search_result(&json!({ "isError": true, "structuredContent": products(4) })).is_err()
        );
        assert!(search_result(&json!({ "content": [] })).is_err());
    }
}
