//! `prompts/list` and `prompts/get`: the catalog's prompts, rendered through the runtime.

use carmy_core::RenderRequest;
use rmcp::{
    ErrorData, RoleServer,
    model::{GetPromptRequestParams, GetPromptResponse, ListPromptsResult, PaginatedRequestParams},
    service::RequestContext,
};

use crate::{mapping, scope::CallScope, server::McpServer};

pub(super) fn list(
    server: &McpServer,
    request: Option<&PaginatedRequestParams>,
) -> Result<ListPromptsResult, ErrorData> {
    server
        .prompts
        .page(request.and_then(|request| request.cursor.as_deref()))
}

pub(super) async fn get(
    server: &McpServer,
    params: GetPromptRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<GetPromptResponse, ErrorData> {
    // Who renders and what stops it, as for a call.
    let scope = CallScope::of(&server.context, &context);
    let request = RenderRequest::new(params.name.clone())
        .arguments(params.arguments.unwrap_or_default())
        .context(scope.context.clone())
        .cancellation(scope.cancellation.clone());
    let outcome = server.runtime.render(request).await;
    let entry = server.runtime.catalog().prompt(&params.name);
    mapping::get_result(entry, outcome).map(Into::into)
}
