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

use rmcp::model::{ErrorData, JsonRpcMessage, ServerJsonRpcMessage, ServerResult, Tool};
use serde::Serialize;
use serde_json::{Map, Value, value::RawValue};

use super::ids::ClientId;
use crate::sync::lock;

/// Where a `subscriptions/listen` stream's notifications and final result name the request.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

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
    /// Appends `message` to `out` as one line of JSON (without the newline). An answer goes out
    /// with `id`, the client's id of the request it answers, exactly as written (`ids.rs`); so
    /// does the subscription id of a `subscriptions/listen` stream. On an error, `out` may hold
    /// part of the message.
    pub(super) fn write(
        &self,
        out: &mut Vec<u8>,
        message: ServerJsonRpcMessage,
        id: Option<&ClientId>,
    ) -> serde_json::Result<()> {
        let Some(id) = id else {
            return serde_json::to_writer(out, &message);
        };
        match message {
            JsonRpcMessage::Response(mut response) => match &mut response.result {
                ServerResult::ListToolsResult(result) => {
                    let tools = std::mem::take(&mut result.tools);
                    let page = self.page_of(tools)?;
                    with_page(out, id.raw(), &response.result, &page.json)
                }
                ServerResult::SubscriptionsListenResult(_) => {
                    let mut result = serde_json::to_value(&response.result)?;
                    set_subscription_id(&mut result, id);
                    answer(out, id.raw(), Some(&result), None)
                }
                result => answer(out, id.raw(), Some(&*result), None),
            },
            JsonRpcMessage::Error(error) => answer::<()>(out, id.raw(), None, Some(&error.error)),
            JsonRpcMessage::Notification(notification) => {
                let mut message =
                    serde_json::to_value(ServerJsonRpcMessage::Notification(notification))?;
                if let Some(params) = message.get_mut("params") {
                    set_subscription_id(params, id);
                }
                serde_json::to_writer(out, &message)
            }
            message @ JsonRpcMessage::Request(_) => serde_json::to_writer(out, &message),
        }
    }

    /// The page of `tools`: the kept one when they are equal to its tools, else a new one.
    fn page_of(&self, tools: Vec<Tool>) -> serde_json::Result<Arc<Page>> {
        if let Some(page) = lock(&self.last).as_ref()
            && page.tools == tools
        {
            return Ok(Arc::clone(page));
        }
        let json = serde_json::value::to_raw_value(&tools)?;
        let page = Arc::new(Page { tools, json });
        *lock(&self.last) = Some(Arc::clone(&page));
        Ok(page)
    }
}

/// A JSON-RPC answer to the request the client called `id`.
fn answer<R: Serialize>(
    out: &mut Vec<u8>,
    id: &RawValue,
    result: Option<&R>,
    error: Option<&ErrorData>,
) -> serde_json::Result<()> {
    #[derive(Serialize)]
    struct Answer<'a, R> {
        jsonrpc: &'static str,
        id: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a R>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a ErrorData>,
    }
    serde_json::to_writer(
        out,
        &Answer {
            jsonrpc: "2.0",
            id,
            result,
            error,
        },
    )
}

/// Puts the client's id in `_meta["io.modelcontextprotocol/subscriptionId"]` of `object` (a
/// result or notification params), where rmcp wrote the id it knows the request by.
fn set_subscription_id(object: &mut Value, id: &ClientId) {
    if let Some(meta) = object.get_mut("_meta").and_then(Value::as_object_mut)
        && meta.contains_key(SUBSCRIPTION_ID)
    {
        meta.insert(SUBSCRIPTION_ID.to_owned(), id.value());
    }
}

/// The JSON-RPC response to `tools/list` request `id`: `result`'s fields (its tools taken out),
/// with `tools` spliced in from `page`.
fn with_page(
    out: &mut Vec<u8>,
    id: &RawValue,
    result: &ServerResult,
    page: &RawValue,
) -> serde_json::Result<()> {
    #[derive(Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: &'a RawValue,
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
    serde_json::to_writer(
        out,
        &Response {
            jsonrpc: "2.0",
            id,
            result: Result { tools: page, rest },
        },
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::{CacheScope, ListToolsResult, RequestId, ServerJsonRpcMessage, ServerResult};
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

    /// The id of an answer, as the client would have written it.
    fn client_id(message: &ServerJsonRpcMessage) -> ClientId {
        let id = match message {
            JsonRpcMessage::Response(response) => &response.id,
            JsonRpcMessage::Error(error) => error.id.as_ref().unwrap(),
            _ => panic!("not an answer"),
        };
        ClientId::new(&serde_json::value::to_raw_value(id).unwrap()).unwrap()
    }

    /// The page's bytes against plain serialization, as JSON values.
    fn same_as_plain(page: &ToolsPage, message: ServerJsonRpcMessage) {
        let plain: Value = serde_json::from_slice(&serde_json::to_vec(&message).unwrap()).unwrap();
        let id = client_id(&message);
        let mut paged = Vec::new();
        page.write(&mut paged, message, Some(&id)).unwrap();
        let paged: Value = serde_json::from_slice(&paged).unwrap();
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

    #[test]
    fn answers_carry_the_client_id_as_written() {
        let page = ToolsPage::default();
        let id = ClientId::new(&RawValue::from_string("7.0".into()).unwrap()).unwrap();
        for message in [
            answer(1, Vec::new()),
            ServerJsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(1)),
            ServerJsonRpcMessage::error(
                rmcp::model::ErrorData::invalid_params("nope", None),
                Some(RequestId::Number(1)),
            ),
        ] {
            let mut plain = serde_json::to_value(&message).unwrap();
            let mut line = Vec::new();
            page.write(&mut line, message, Some(&id)).unwrap();
            let line = String::from_utf8(line).unwrap();
            assert!(line.starts_with(r#"{"jsonrpc":"2.0","id":7.0,"#), "{line}");
            plain["id"] = json!(7.0);
            assert_eq!(serde_json::from_str::<Value>(&line).unwrap(), plain);
        }
    }
}
