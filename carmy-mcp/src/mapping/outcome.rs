//! `tools/call` answers: an outcome becomes a result, a protocol error, or a question for the
//! human, by what the runtime says it is.

use carmy_core::{AgentError, Outcome, OutcomeKind, ToolEntry, codes};
use rmcp::model::{CallToolResponse, ClientCapabilities, ErrorCode, ErrorData};

use super::{result::call_result, tasks::create_result};

/// The answer to `tools/call`: the tool's result (failures included), a JSON-RPC error
/// (`-32602`) for a call that named no tool, an `input_required` result carrying the questions
/// the tool or its approver asked, or the task the call became.
pub(crate) fn call_response(
    entry: Option<&ToolEntry>,
    mut outcome: Outcome,
    stateless: bool,
) -> Result<CallToolResponse, ErrorData> {
    // 2026-07-28 has its own answer for a call that needs what the client did not declare.
    if stateless
        && let Err(error) = &outcome.result
        && error.code() == codes::CANNOT_ASK
    {
        return Err(missing_capability(error));
    }
    if let Err(error) = &outcome.result
        && error.code() == codes::TASK_REQUIRED
    {
        return Err(tasks_required(error));
    }
    match std::mem::replace(&mut outcome.kind, OutcomeKind::Result) {
        OutcomeKind::Task(task) => Ok(create_result(&task).into()),
        OutcomeKind::Unroutable => {
            let error = outcome
                .result
                .err()
                .unwrap_or_else(|| AgentError::internal("an unroutable call produced a result"));
            Err(unknown_tool(&error))
        }
        OutcomeKind::InputRequired(pending) => match super::input_required(&pending) {
            Ok(asked) => Ok(asked.into()),
            Err(error) => {
                Ok(call_result(entry, &outcome.execution_id, outcome.status, Err(error)).into())
            }
        },
        _ => Ok(call_result(entry, &outcome.execution_id, outcome.status, outcome.result).into()),
    }
}

/// `-32021`, naming the capability the tool's question needed (`{"sampling": {}}`).
fn missing_capability(error: &AgentError) -> ErrorData {
    let kind = error
        .details()
        .and_then(|details| details.get("ask"))
        .and_then(serde_json::Value::as_str);
    let capability = match kind {
        Some("sample") => "sampling",
        Some("roots") => "roots",
        _ => "elicitation",
    };
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        error.message().to_owned(),
        Some(serde_json::json!({ "requiredCapabilities": { capability: {} } })),
    )
}

/// `-32021`, naming the tasks extension: the tool runs only as a task, and the request did not
/// declare it can follow one.
fn tasks_required(error: &AgentError) -> ErrorData {
    let mut data = serde_json::json!({
        "requiredCapabilities": ClientCapabilities::builder().enable_tasks().build(),
    });
    data["error"] = error.to_envelope()["error"].clone();
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        error.message().to_owned(),
        Some(data),
    )
}

fn unknown_tool(error: &AgentError) -> ErrorData {
    ErrorData::invalid_params(error.message().to_owned(), Some(error.to_envelope()))
}
