//! `prompts/list` and `prompts/get`: the catalog's prompts, rendered through the runtime.

use std::pin::pin;

use carmy_core::Request;
use rmcp::{
    ErrorData, RoleServer,
    model::{GetPromptRequestParams, GetPromptResponse, ListPromptsResult, PaginatedRequestParams},
    service::RequestContext,
};

use serde_json::Value;

use crate::{
    client::{Binding, ClientAsker},
    mapping,
    scope::CallScope,
    server::McpServer,
};

pub(super) fn list(
    server: &McpServer,
    request: Option<&PaginatedRequestParams>,
    context: &RequestContext<RoleServer>,
) -> Result<ListPromptsResult, ErrorData> {
    let cursor = request.and_then(|request| request.cursor.as_deref());
    let caller = crate::scope::context_of(&server.context, context);
    let disabled = server.runtime.catalog().disabled();
    if !caller.restricts_prompts() && !disabled.disables_prompts() {
        return server.prompts.page(cursor);
    }
    // The caller sees only what it may get, of what the catalog serves now.
    server.prompts.page_for(cursor, |name| {
        caller.allows_prompt(name) && !disabled.prompt(name)
    })
}

pub(super) async fn get(
    server: &McpServer,
    params: GetPromptRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<GetPromptResponse, ErrorData> {
    // Who renders and what stops it, as for a call.
    let scope = CallScope::of(&server.context, &context);
    let arguments = params.arguments.unwrap_or_default();
    // A prompt may ask the client, as a tool does.
    let round = server.round_trips.round(
        &context,
        Binding {
            method: "prompts/get",
            name: &params.name,
            arguments: &Value::Object(arguments.clone()),
            principal: scope.context.principal(),
        },
        params.input_responses,
        params.request_state.as_deref(),
    )?;
    let request = Request::get_prompt(params.name.clone())
        .arguments(arguments)
        .context(scope.context.clone())
        .cancellation(scope.cancellation.clone())
        .asker(ClientAsker::new(&round));
    let outcome = scope.run(pin!(server.runtime.get_prompt(request))).await;
    let entry = server.runtime.catalog().prompt(&params.name);
    mapping::get_result(entry, outcome)
}
