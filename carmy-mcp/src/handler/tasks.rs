//! `tasks/get`, `tasks/update` and `tasks/cancel` (the tasks extension, SEP-2663): each names a
//! task by id, and the runtime answers for the caller's principal, so another principal's task
//! is not found, exactly as an unknown one. rmcp routes the three only when the server declares
//! the extension and the request the client's, so they never reach here otherwise.

use std::collections::BTreeMap;

use carmy_core::TaskKey;
use rmcp::{
    ErrorData, RoleServer,
    model::{CancelTaskParams, GetTaskParams, GetTaskResult, UpdateTaskParams},
    service::RequestContext,
};
use serde_json::json;

use crate::{mapping, scope, server::McpServer};

/// The key of `task_id` for the request's principal.
fn key(server: &McpServer, context: &RequestContext<RoleServer>, task_id: &str) -> TaskKey {
    let context = scope::context_of(&server.context, context);
    TaskKey::new(context.principal(), task_id)
}

pub(super) async fn get(
    server: &McpServer,
    params: GetTaskParams,
    context: &RequestContext<RoleServer>,
) -> Result<GetTaskResult, ErrorData> {
    let key = key(server, context, &params.task_id);
    let record = server
        .runtime
        .task(&key)
        .await
        .map_err(|error| mapping::task_error(&error))?;
    let entry = server.runtime.catalog().registered(&record.tool);
    Ok(mapping::task_result(entry, &record))
}

/// Answers to the task's questions. An answer to a question that is not waiting (an unknown
/// key, one answered already, a task that ended) is ignored, as SEP-2663 says, and so is
/// acknowledged like the others (rmcp's acknowledgement has nothing to name them in: the log
/// does); an answer to a waiting question that is not of the shape the question asks is
/// refused (`-32602`, naming its key), and then none of the request's answers is taken.
pub(super) async fn update(
    server: &McpServer,
    params: UpdateTaskParams,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let key = key(server, context, &params.task_id);
    let record = server
        .runtime
        .task(&key)
        .await
        .map_err(|error| mapping::task_error(&error))?;
    for (answered, answer) in &params.input_responses {
        let malformed = record
            .pending()
            .find(|(asked, _)| asked == answered)
            .is_some_and(|(_, ask)| !mapping::answers(ask, answer));
        if malformed {
            return Err(ErrorData::invalid_params(
                format!(
                    "`inputResponses[\"{answered}\"]` is not an answer to the {} it names",
                    kind(answered, &record)
                ),
                Some(json!({ "field": format!("inputResponses/{answered}") })),
            ));
        }
    }
    let answers: BTreeMap<_, _> = params.input_responses.into_iter().collect();
    let responded = server
        .runtime
        .answer_task(&key, answers)
        .await
        .map_err(|error| mapping::task_error(&error))?;
    if !responded.ignored.is_empty() {
        tracing::debug!(
            task_id = %key.id(),
            ignored = ?responded.ignored,
            "tasks/update answered questions that were not waiting; ignored"
        );
    }
    Ok(())
}

/// What the question under `key` asks for, in MCP's words.
fn kind(key: &str, record: &carmy_core::TaskRecord) -> &'static str {
    let ask = record.pending().find(|(asked, _)| *asked == key);
    match ask.map(|(_, ask)| ask.kind()) {
        Some(carmy_core::AskKind::Sample) => "sampling request (`sampling/createMessage`)",
        Some(carmy_core::AskKind::Roots) => "roots request (`roots/list`)",
        _ => "elicitation (`elicitation/create`)",
    }
}

/// A cancel request: acknowledged for any task the caller has, running or ended (ending a
/// task that ended changes nothing); the task reports `cancelled` once its tool stopped.
pub(super) async fn cancel(
    server: &McpServer,
    params: CancelTaskParams,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let key = key(server, context, &params.task_id);
    server
        .runtime
        .cancel_task(&key)
        .await
        .map_err(|error| mapping::task_error(&error))?;
    Ok(())
}
