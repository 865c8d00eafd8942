//! `resources/list`, `resources/templates/list`, `resources/read`: the catalog's resources and
//! its providers', read through the runtime.

use std::pin::pin;

use carmy_core::Request;
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
    let scope = CallScope::of(&server.context, context);
    // The caller sees only what it may read, of what the catalog serves now.
    let caller = &scope.context;
    let disabled = server.runtime.catalog().disabled();
    let visible = (caller.restricts_resources() || disabled.disables_resources())
        .then_some(|uri: &str| caller.allows_resource(uri) && !disabled.resource(uri));
    if server.runtime.catalog().providers().next().is_none() {
        // Only the catalog's own: computed once.
        return match visible {
            None => server.resources.resources(cursor(request)),
            Some(visible) => server.resources.resources_for(cursor(request), visible),
        };
    }
    // Providers list what they serve now, stopped as a call would be.
    let provided = scope
        .run(pin!(server.runtime.list_provided(&scope.cancellation)))
        .await;
    server
        .resources
        .resources_with(provided, cursor(request), |uri| {
            visible.is_none_or(|visible| visible(uri))
        })
}

pub(super) fn templates(
    server: &McpServer,
    request: Option<&PaginatedRequestParams>,
    context: &RequestContext<RoleServer>,
) -> Result<ListResourceTemplatesResult, ErrorData> {
    let caller = crate::scope::context_of(&server.context, context);
    let disabled = server.runtime.catalog().disabled();
    if !caller.restricts_resources() && !disabled.disables_resources() {
        return server.resources.templates(cursor(request));
    }
    server.resources.templates_for(cursor(request), |template| {
        caller.allows_resource(template) && !disabled.resource(template)
    })
}

pub(super) async fn read(
    server: &McpServer,
    params: ReadResourceRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, ErrorData> {
    // Who reads and what stops it, as for a call.
    let scope = CallScope::of(&server.context, &context);
    let request = Request::read(params.uri.clone())
        .context(scope.context.clone())
        .cancellation(scope.cancellation.clone());
    let outcome = scope.run(pin!(server.runtime.read(request))).await;
    let entry = server
        .runtime
        .catalog()
        .resolve_resource(&params.uri)
        .map(|(entry, _)| entry);
    let version = context.protocol_version();
    mapping::read_result(&params.uri, entry, outcome, version.as_ref()).map(Into::into)
}
