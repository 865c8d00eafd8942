//! `tools/list` answers written with a page of tools serialized once.
//!
//! A server's tools rarely change while it serves, yet every `tools/list` result carries all of
//! them, and rmcp would serialize them anew for each request (1.66 MB of JSON for a catalog of
//! 1,000 tools). This transport keeps the JSON of the last tools array it wrote, beside the tools
//! themselves; a result whose tools are *equal* to those is written with the kept JSON spliced
//! in, every other field serialized as usual. Equal tools serialize to the same JSON, so the
//! bytes are those of the ordinary path (the tests hold both side by side); the check is cheap
//! when the handler shares its schemas (`Arc`) with every answer, as Carmy's does. The handler's
//! answer is complete either way: the page is this transport's business alone.

use std::sync::{Arc, Mutex};

use rmcp::model::{JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerResult, Tool};
use serde::Serialize;
use serde_json::{Map, Value, value::RawValue};

/// The last tools array written, shareable by every transport of one server.
#[derive(Debug, Default)]
pub(crate) struct ToolsPage {
    last: Mutex<Option<Arc<Page>>>,
}

#[derive(Debug)]
struct Page {
    tools: Vec<Tool>,
    json: Box<RawValue>,
}

impl ToolsPage {
    /// `message` as one line of JSON (without the newline).
    pub(super) fn to_vec(&self, message: ServerJsonRpcMessage) -> serde_json::Result<Vec<u8>> {
        match message {
            JsonRpcMessage::Response(mut response) => match &mut response.result {
                ServerResult::ListToolsResult(result) => {
                    let tools = std::mem::take(&mut result.tools);
                    let page = self.page_of(tools)?;
                    with_page(&response.id, &response.result, &page.json)
                }
                _ => serde_json::to_vec(&ServerJsonRpcMessage::Response(response)),
            },
            message => serde_json::to_vec(&message),
        }
    }

    /// The page of `tools`: the kept one when they are equal to its tools, else a new one.
    fn page_of(&self, tools: Vec<Tool>) -> serde_json::Result<Arc<Page>> {
        if let Some(page) = self.lock().as_ref()
            && page.tools == tools
        {
            return Ok(Arc::clone(page));
        }
        let json = serde_json::value::to_raw_value(&tools)?;
        let page = Arc::new(Page { tools, json });
        *self.lock() = Some(Arc::clone(&page));
        Ok(page)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Page>>> {
        self.last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The JSON-RPC response to `tools/list` request `id`: `result`'s fields (its tools taken out),
/// with `tools` spliced in from `page`.
fn with_page(
    id: &RequestId,
    result: &ServerResult,
    page: &RawValue,
) -> serde_json::Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        result: Result<'a>,
    }
    #[derive(Serialize)]
    struct Result<'a> {
        tools: &'a RawValue,
        #[serde(flatten)]
        rest: Map<String, Value>,
    }
    // The other fields (`ttlMs`, `cacheScope`, `resultType`... as rmcp set them for the peer's
    // protocol version) are few and small.
    let mut rest = match serde_json::to_value(result)? {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    rest.remove("tools");
    serde_json::to_vec(&Response {
        jsonrpc: "2.0",
        id,
        result: Result { tools: page, rest },
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::{CacheScope, ListToolsResult, ServerJsonRpcMessage, ServerResult};
    use serde_json::{Value, json};

    use super::*;

    fn tool(name: &str, schema: &Arc<rmcp::model::JsonObject>) -> Tool {
        Tool::new_with_raw(name.to_owned(), Some("a tool".into()), Arc::clone(schema))
    }

    fn answer(id: i64, tools: Vec<Tool>) -> ServerJsonRpcMessage {
        let result = ListToolsResult::with_all_items(tools)
            .with_ttl_ms(60_000)
            .with_cache_scope(CacheScope::Public);
        ServerJsonRpcMessage::response(ServerResult::ListToolsResult(result), RequestId::Number(id))
    }

    /// The page's bytes against plain serialization, as JSON values.
    fn same_as_plain(page: &ToolsPage, message: ServerJsonRpcMessage) {
        let plain: Value = serde_json::from_slice(&serde_json::to_vec(&message).unwrap()).unwrap();
        let paged: Value = serde_json::from_slice(&page.to_vec(message).unwrap()).unwrap();
        assert_eq!(paged, plain);
    }

    #[test]
    fn a_page_is_written_as_its_tools_would_be_and_follows_their_changes() {
        let schema = Arc::new(
            json!({ "type": "object", "properties": { "q": { "type": "string" } } })
                .as_object()
                .cloned()
                .unwrap(),
        );
        let page = ToolsPage::default();
        let two = vec![tool("a", &schema), tool("b", &schema)];
        same_as_plain(&page, answer(1, two.clone()));
        same_as_plain(&page, answer(2, two.clone()));
        // Other tools, fewer tools, no tools: never the kept page.
        same_as_plain(
            &page,
            answer(3, vec![tool("a", &schema), tool("c", &schema)]),
        );
        same_as_plain(&page, answer(4, vec![tool("a", &schema)]));
        same_as_plain(&page, answer(5, Vec::new()));
        // An equal schema that is not the same allocation is still equal.
        let copy = Arc::new((*schema).clone());
        same_as_plain(&page, answer(6, vec![tool("a", &copy), tool("b", &copy)]));
        let mut changed = (*schema).clone();
        changed.insert("required".into(), json!(["q"]));
        let changed = Arc::new(changed);
        same_as_plain(
            &page,
            answer(7, vec![tool("a", &schema), tool("b", &changed)]),
        );
    }

    #[test]
    fn other_messages_are_written_as_they_are() {
        let page = ToolsPage::default();
        let error = ServerJsonRpcMessage::error(
            rmcp::model::ErrorData::invalid_params("nope", None),
            Some(RequestId::Number(9)),
        );
        same_as_plain(&page, error);
    }
}
