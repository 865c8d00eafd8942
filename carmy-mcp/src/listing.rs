//! `tools/list`: the catalog as MCP `Tool`s, built once, and serialized once.
//!
//! A catalog does not change while it is served, yet rmcp's handler returns a
//! `ListToolsResult` by value, which means a deep copy and a full serialization of every tool per
//! request (10.8 ms for 1,000 tools). On Carmy's own line transport the handler instead returns
//! the result without its tools, and the transport writes them from [`Listing::page`], the JSON
//! of the tools array made on the first request and kept. Other transports (HTTP, any rmcp
//! transport) get the full result from the handler, as before; the bytes on the wire are the same
//! either way (see the tests).

use std::{collections::HashMap, sync::OnceLock};

use carmy_core::Catalog;
use rmcp::model::{
    CacheScope, JsonRpcMessage, ListToolsResult, RequestId, ServerJsonRpcMessage, ServerResult,
    Tool,
};
use serde::Serialize;
use serde_json::{Map, Value, value::RawValue};

use crate::mapping;

/// How long clients may keep `tools/list` (the catalog never changes while serving).
const TOOLS_TTL_MS: u64 = 60_000;

/// The catalog as MCP sees it.
#[derive(Debug)]
pub(crate) struct Listing {
    tools: Vec<Tool>,
    by_name: HashMap<&'static str, usize>,
    /// `tools` as JSON, made on first use.
    page: OnceLock<Box<RawValue>>,
}

impl Listing {
    pub(crate) fn new(catalog: &Catalog) -> Self {
        let by_name = catalog
            .iter()
            .enumerate()
            .map(|(index, entry)| (entry.name(), index))
            .collect();
        Self {
            tools: catalog.iter().map(mapping::tool).collect(),
            by_name,
            page: OnceLock::new(),
        }
    }

    /// The tool named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&index| &self.tools[index])
    }

    /// The whole catalog as one page (there is no `nextCursor`).
    pub(crate) fn result(&self) -> ListToolsResult {
        Self::result_with(self.tools.clone())
    }

    /// [`result`](Self::result) without its tools, for a transport that writes [`page`](Self::page)
    /// in their place.
    pub(crate) fn result_without_tools() -> ListToolsResult {
        Self::result_with(Vec::new())
    }

    fn result_with(tools: Vec<Tool>) -> ListToolsResult {
        ListToolsResult::with_all_items(tools)
            .with_ttl_ms(TOOLS_TTL_MS)
            .with_cache_scope(CacheScope::Public)
    }

    /// The JSON array of the tools, serialized on first use.
    pub(crate) fn page(&self) -> &RawValue {
        self.page.get_or_init(|| {
            serde_json::value::to_raw_value(&self.tools)
                .expect("tools serialize: their schemas are JSON values")
        })
    }
}

/// `message` as JSON, with the tools of a `tools/list` result taken from `listing`'s page when
/// there is one (the server left them out of the result).
pub(crate) fn to_vec(
    message: &ServerJsonRpcMessage,
    listing: Option<&Listing>,
) -> serde_json::Result<Vec<u8>> {
    match (message, listing) {
        (JsonRpcMessage::Response(response), Some(listing)) => match &response.result {
            ServerResult::ListToolsResult(result) => {
                response_with_page(&response.id, result, listing)
            }
            _ => serde_json::to_vec(message),
        },
        _ => serde_json::to_vec(message),
    }
}

/// The JSON-RPC response to `tools/list` request `id`, with `result`'s fields but `tools` taken
/// from `listing`'s page.
fn response_with_page(
    id: &RequestId,
    result: &ListToolsResult,
    listing: &Listing,
) -> serde_json::Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        result: Page<'a>,
    }
    #[derive(Serialize)]
    struct Page<'a> {
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
        result: Page {
            tools: listing.page(),
            rest,
        },
    })
}
