//! `tools/call` answers: an outcome becomes a result, a protocol error, or a question for the
//! human, by what the runtime says it is.

use carmy_core::{
    AgentError, ExecutionId, ExecutionStatus, Outcome, OutcomeKind, Question, ToolContent,
    ToolEntry, codes,
};
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock as McpBlock, ErrorCode,
    ErrorData, InputRequest, InputRequests, InputRequiredResult, MetaObject,
};

use super::{
    META_ERROR, META_EXECUTION_ID, META_STATUS,
    confirmation::{CONFIRM_INPUT_KEY, confirmation_request},
    content::block,
};

/// The answer to `tools/call`: the tool's result (failures included), a JSON-RPC error
/// (`-32602`) for a call that named no tool, an `input_required` result carrying the question
/// the call's approver asked, or the task the call became.
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
        OutcomeKind::Task(task) => Ok(super::tasks::create_result(&task).into()),
        OutcomeKind::Unroutable => {
            let error = outcome
                .result
                .err()
                .unwrap_or_else(|| AgentError::internal("an unroutable call produced a result"));
            Err(unknown_tool(&error))
        }
        OutcomeKind::InputRequired(question) => Ok(input_required(entry, &question).into()),
        OutcomeKind::AwaitingInput(pending) => match crate::asking::input_requests(&pending) {
            Ok(requests) => Ok(InputRequiredResult::new(
                Some(requests),
                pending.state().map(str::to_owned),
            )
            .into()),
            Err(error) => {
                Ok(call_result(entry, &outcome.execution_id, outcome.status, Err(error)).into())
            }
        },
        _ => Ok(call_result(entry, &outcome.execution_id, outcome.status, outcome.result).into()),
    }
}

/// The question, as an `input_required` result: the confirmation form, and the approver's
/// state for the client to echo.
fn input_required(entry: Option<&ToolEntry>, question: &Question) -> InputRequiredResult {
    let tool = entry.map_or("", ToolEntry::name);
    let mut requests = InputRequests::new();
    requests.insert(
        CONFIRM_INPUT_KEY.to_owned(),
        InputRequest::Elicitation(confirmation_request(tool, question.message())),
    );
    InputRequiredResult::new(Some(requests), Some(question.state().to_owned()))
}

/// The tool's result: its output, or its error (never `structuredContent`); a task's, once it
/// ended, too.
pub(crate) fn call_result(
    entry: Option<&ToolEntry>,
    execution_id: &ExecutionId,
    status: ExecutionStatus,
    result: Result<serde_json::Value, AgentError>,
) -> CallToolResult {
    let mut meta = MetaObject::new();
    meta.insert(META_EXECUTION_ID.into(), execution_id.as_str().into());
    meta.insert(META_STATUS.into(), status.as_str().into());
    let result = match result {
        Ok(value) if entry.is_some_and(ToolEntry::returns_content) => {
            match ToolContent::from_json(&value) {
                Ok(content) => CallToolResult::success(content.iter().map(block).collect()),
                // The output is what `ToolContent` serialized to, so this is a store that
                // returned something else: said so rather than shown half.
                Err(error) => {
                    let error = AgentError::internal(format!(
                        "the tool's content does not read back: {error}"
                    ));
                    let envelope = error.to_envelope();
                    meta.insert(META_ERROR.into(), envelope["error"].clone());
                    CallToolResult::error(vec![McpBlock::text(envelope.to_string())])
                }
            }
        }
        Ok(value) => {
            // Written straight into a buffer: `Value`'s `Display` goes through `fmt::Write`, a
            // call per token.
            let text = serde_json::to_string(&value).unwrap_or_else(|_| value.to_string());
            let mut result = CallToolResult::success(vec![McpBlock::text(text)]);
            if value.is_object() && entry.is_some_and(ToolEntry::has_object_output) {
                // structuredContent, and the same JSON as text for clients that only read text.
                result.structured_content = Some(value);
            }
            result
        }
        Err(error) => {
            let envelope = error.to_envelope();
            meta.insert(META_ERROR.into(), envelope["error"].clone());
            // Never structuredContent: clients check it against the tool's output schema.
            CallToolResult::error(vec![McpBlock::text(envelope.to_string())])
        }
    };
    result.with_meta(Some(meta))
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
