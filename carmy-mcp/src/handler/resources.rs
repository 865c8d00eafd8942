//! `resources/list`, `resources/templates/list`, `resources/read`: the catalog's resources and
//! its providers', read through the runtime.

use carmy_core::ReadRequest;
use rmcp::{
    ErrorData, RoleServer,
    model::{
        ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
        ReadResourceRequestParams, ReadResourceResponse,
    },
    service::RequestContext,
};

use crate::{mapping, scope::CallScope, server::McpServer};

fn cursor(request: Option<&PaginatedRequestParams>) -> Option<&str> {
    request.and_then(|request| request.cursor.as_deref())
}

pub(super) async fn list(
    server: &McpServer,
    request: Option<&PaginatedRequestParams>,
    context: &RequestContext<RoleServer>,
) -> Result<ListResourcesResult, ErrorData> {
    if server.runtime.catalog().providers().next().is_none() {
        // Only the catalog's own: computed once.
        return server.resources.resources(cursor(request));
    }
    // Providers list what they serve now, stopped as a call would be.
    let scope = CallScope::of(&server.context, context);
    let provided = server.runtime.list_provided(&scope.cancellation).await;
    server.resources.resources_with(provided, cursor(request))
}

pub(super) fn templates(
    server: &McpServer,
    request: Option<&PaginatedRequestParams>,
) -> Result<ListResourceTemplatesResult, ErrorData> {
    server.resources.templates(cursor(request))
}

pub(super) async fn read(
    server: &McpServer,
    params: ReadResourceRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, ErrorData> {
    // Who reads and what stops it, as for a call.
    let scope = CallScope::of(&server.context, &context);
    let request = ReadRequest::new(params.uri.clone())
        .context(scope.context.clone())
        .cancellation(scope.cancellation.clone());
    let outcome = server.runtime.read(request).await;
    let entry = server
        .runtime
        .catalog()
        .resolve_resource(&params.uri)
        .map(|(entry, _)| entry);
    let version = context.protocol_version();
    mapping::read_result(&params.uri, entry, outcome, version.as_ref()).map(Into::into)
}
