//! `tools/call`: an MCP request becomes a runtime [`Request`], its outcome an MCP answer.

use std::pin::pin;

use carmy_core::{Outcome, Request};
use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResponse, ProtocolVersion},
    service::RequestContext,
};
use serde_json::Value;

use super::{progress, requests};
use crate::{
    client::{Binding, ClientApproval, ClientAsker},
    mapping,
    scope::CallScope,
    server::McpServer,
};

pub(super) async fn call(
    server: &McpServer,
    params: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let request_id = requests::request_id(&context.meta)?;
    let name = params.name;
    let arguments = params.arguments.map_or(Value::Null, Value::Object);
    // Who the call runs as and what stops it: the host's context and rmcp's cancellation, or
    // what the transport attached to this request (HTTP: its authenticated context, its
    // disconnect and deadline).
    let scope = CallScope::of(&server.context, &context);
    // A tool's questions, and the confirmation the host did not grant, go to the client: in
    // the call up to 2025-11-25, as an `input_required` result on 2026-07-28, whose retry
    // brings the answers and the state of earlier rounds (a state that fails verification ends
    // the call here).
    let modern = context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    let round = server.round_trips.round(
        &context,
        Binding {
            method: "tools/call",
            name: name.as_ref(),
            arguments: &arguments,
            principal: scope.context.principal(),
        },
        params.input_responses,
        params.request_state.as_deref(),
    )?;
    // The context is the host's; nothing from the request (arguments, `_meta`) adds to it.
    let mut request = Request::new(name.as_ref(), arguments)
        .context(scope.context.clone())
        .cancellation(scope.cancellation.clone())
        .asker(ClientAsker::new(&round));
    if let Some(request_id) = request_id {
        request = request.request_id(request_id);
    }
    // A caller that declared the tasks extension (2026-07-28, in the request's `_meta`) can
    // follow a task: a call of a tool that may run as one becomes one (the runtime decides
    // when). Older sessions get plain calls, and a tool that runs only as a task is refused.
    let follows_tasks = modern
        && context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
    if follows_tasks {
        request = request.allow_task();
    }
    // The human in front of the client may approve what the host did not grant; the runtime
    // asks only when the tool needs it.
    if let Some(approver) = ClientApproval::of(&round) {
        request = request.approver(approver);
    }
    // rmcp cancels `ct` on `notifications/cancelled`; the runtime then drops the tool. The rare
    // path (forwarding progress) is boxed: the future of every call is as large as its largest
    // await, and rmcp moves it into a task per request.
    let outcome: Outcome = match context.meta.get_progress_token() {
        Some(token) => {
            let mut work = Box::pin(progress::with_progress(&context.peer, token, |reporter| {
                server.runtime.execute(request.progress(reporter))
            }));
            scope.run(work.as_mut()).await
        }
        None => scope.run(pin!(server.runtime.execute(request))).await,
    };
    // Shaped by the tool that ran, though it may have been disabled since.
    mapping::call_response(server.runtime.catalog().registered(&name), outcome, modern)
}
