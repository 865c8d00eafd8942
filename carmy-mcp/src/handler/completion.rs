//! `completion/complete`: values for a prompt's argument or a resource template's variable,
//! suggested through the runtime.

use std::pin::pin;

use carmy_core::Request;
use rmcp::{
    ErrorData, RoleServer,
    model::{CompleteRequestParams, CompleteResult},
    service::RequestContext,
};

use crate::{mapping, scope::CallScope, server::McpServer};

pub(super) async fn complete(
    server: &McpServer,
    params: CompleteRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CompleteResult, ErrorData> {
    let scope = CallScope::of(&server.context, &context);
    let arguments = params
        .context
        .and_then(|context| context.arguments)
        .unwrap_or_default();
    let request = Request::complete(
        mapping::completion_target(&params.r#ref),
        params.argument.name,
        params.argument.value,
    )
    .arguments(arguments)
    .context(scope.context.clone())
    .cancellation(scope.cancellation.clone());
    mapping::complete_result(scope.run(pin!(server.runtime.complete(request))).await)
}
