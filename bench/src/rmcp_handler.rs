//! The hand-written rmcp `ServerHandler` behind the `bench-rmcp-handler` contender, also used
//! in-process by the microbenchmarks: `list_tools`/`call_tool` by hand, serde decoding, no
//! validation against the schema, none of Carmy's guarantees. It reads the shop's
//! `shop://catalog` and `shop://products/{id}` resources by hand too (the products alone: no
//! stock from a store).

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
        ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
        ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
        ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::Value;

use crate::catalog::{self, SearchInput};

/// Serves `search_products`, plus `extra` copies of it named `tool_0000`, `tool_0001`, ...
/// (to measure `tools/list` on big catalogs).
#[derive(Debug, Clone)]
pub struct RmcpShop {
    tools: Arc<Vec<Tool>>,
}

impl RmcpShop {
    /// Just `search_products`.
    pub fn new() -> Self {
        Self::with_extra_tools(0)
    }

    /// `search_products` and `extra` more tools of the same shape.
    pub fn with_extra_tools(extra: usize) -> Self {
        let Value::Object(input) = catalog::input_schema() else {
            unreachable!("the input schema is an object")
        };
        let Value::Object(output) = catalog::output_schema() else {
            unreachable!("the output schema is an object")
        };
        let (input, output) = (Arc::new(input), Arc::new(output));
        let tool = |name: String| {
            Tool::new(name, catalog::DESCRIPTION, input.clone())
                .with_raw_output_schema(output.clone())
        };
        let mut tools = vec![tool("search_products".into())];
        tools.extend((0..extra).map(|i| tool(format!("tool_{i:04}"))));
        Self {
            tools: Arc::new(tools),
        }
    }
}

impl Default for RmcpShop {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerHandler for RmcpShop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("bench-rmcp-handler", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "search_products" && !request.name.starts_with("tool_") {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let input: SearchInput = serde_json::from_value(arguments)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let output = serde_json::to_value(catalog::search(&input))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(CallToolResult::structured(output).into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let catalog = Resource::new(CATALOG_URI, "catalog");
        Ok(ListResourcesResult::with_all_items(vec![catalog]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let json = if request.uri == CATALOG_URI {
            serde_json::to_string(&catalog::all_products().collect::<Vec<_>>())
        } else {
            let product = request
                .uri
                .strip_prefix(PRODUCT_URI_PREFIX)
                .and_then(catalog::product)
                .ok_or_else(|| {
                    ErrorData::resource_not_found(format!("no resource `{}`", request.uri), None)
                })?;
            serde_json::to_string(product)
        }
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let contents = ResourceContents::TextResourceContents {
            uri: request.uri,
            mime_type: Some("application/json".into()),
            text: json,
            meta: None,
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// The shop's resource of every product.
const CATALOG_URI: &str = "shop://catalog";
/// The shop's resource of one product: this, then its id.
const PRODUCT_URI_PREFIX: &str = "shop://products/";
