//! Contender `bench-rmcp-handler`: a hand-written rmcp `ServerHandler` serving
//! `search_products`. `list_tools` and `call_tool` by hand, serde decoding of the arguments,
//! no validation against the schema, none of Carmy's guarantees: the floor of what rmcp costs.
//!
//! Served over `rmcp::transport::stdio()`; `--pipes` serves over `stdio_pipes()` instead
//! (non-blocking pipe descriptors, no blocking-pool hand-off), to measure that difference.

use std::sync::Arc;

use carmy_bench::catalog::{self, SearchInput};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::Value;

#[derive(Debug, Clone)]
struct Shop {
    tool: Tool,
}

impl Shop {
    fn new() -> Self {
        let Value::Object(input) = catalog::input_schema() else {
            unreachable!("the input schema is an object")
        };
        let Value::Object(output) = catalog::output_schema() else {
            unreachable!("the output schema is an object")
        };
        let tool = Tool::new("search_products", catalog::DESCRIPTION, Arc::new(input))
            .with_raw_output_schema(Arc::new(output));
        Self { tool }
    }
}

impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bench-rmcp-handler", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == self.tool.name).then(|| self.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "search_products" {
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
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = if std::env::args().any(|a| a == "--pipes") {
        Shop::new().serve(rmcp::transport::stdio_pipes()).await?
    } else {
        Shop::new().serve(rmcp::transport::stdio()).await?
    };
    service.waiting().await?;
    Ok(())
}
