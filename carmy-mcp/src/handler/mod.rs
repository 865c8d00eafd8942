//! The rmcp `ServerHandler` of [`McpServer`]: one file per MCP area (`tools.rs`,
//! `resources.rs`, `prompts.rs`, `completion.rs`), and the
//! requests rmcp could not parse (`requests.rs`). Lifecycles (`initialize`, `server/discover`,
//! `ping`) are rmcp's.

mod completion;
mod progress;
mod prompts;
mod requests;
mod resources;
mod tools;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelledNotificationParam, CompleteRequestParams,
        CompleteResult, CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
        Tool,
    },
    service::{NotificationContext, RequestContext},
};

use crate::server::McpServer;

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        (*self.info).clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(self.listing.result())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listing.get(name).cloned()
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        tools::call(self, params, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        resources::list(self, request.as_ref())
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        resources::templates(self, request.as_ref())
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(self, params, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        prompts::list(self, request.as_ref())
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        prompts::get(self, params, context).await
    }

    async fn complete(
        &self,
        params: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        completion::complete(self, params, context).await
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        // rmcp has already cancelled the request's token, which stops the execution.
        tracing::debug!(
            request_id = ?notification.request_id,
            reason = notification.reason.as_deref().unwrap_or(""),
            "the client cancelled a request"
        );
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(requests::unparsed(request))
    }
}
