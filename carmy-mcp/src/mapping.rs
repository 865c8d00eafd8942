//! Carmy → MCP: catalog entries become `Tool`s, outcomes become `CallToolResult`s or JSON-RPC
//! errors. Pure functions; no protocol state.

use std::sync::Arc;

use carmy_core::{AgentError, Outcome, ToolEntry, codes};
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, JsonObject, MetaObject, Tool, ToolAnnotations,
};
use serde_json::{Map, Value, json};

/// `Tool._meta`: the declared effect (`none`, `read`, `write`, `destructive`, `external_write`).
pub const META_EFFECT: &str = "carmy/effect";
/// `Tool._meta`: whether the host must grant `confirm:<tool>` (`none`, `required`).
pub const META_CONFIRMATION: &str = "carmy/confirmation";
/// `Tool._meta`: whether executions of the tool may overlap.
pub const META_PARALLEL_SAFE: &str = "carmy/parallel_safe";
/// `tools/call` request `_meta`: the idempotency key of the call, chosen by the host.
pub const META_REQUEST_ID: &str = "carmy/request_id";
/// `CallToolResult._meta`: the execution that produced the result (the original one for a
/// replay).
pub const META_EXECUTION_ID: &str = "carmy/execution_id";
/// `CallToolResult._meta`: how the execution ended (`succeeded`, `failed`, `rejected`,
/// `replayed`, ...).
pub const META_STATUS: &str = "carmy/status";
/// `CallToolResult._meta` on errors: the error object (`code`, `message`, `category`,
/// `retryable`, `details`, `next_tool`).
pub const META_ERROR: &str = "carmy/error";

/// One catalog entry as an MCP `Tool`.
pub(crate) fn tool(entry: &ToolEntry) -> Tool {
    let description = Some(entry.description())
        .filter(|description| !description.is_empty())
        .map(Into::into);
    let mut tool = Tool::new_with_raw(
        entry.name(),
        description,
        schema_object(entry.input_schema()),
    )
    .with_annotations(annotations(entry))
    .with_meta(tool_meta(entry));
    if let Some(title) = entry.title() {
        tool = tool.with_title(title);
    }
    // `structuredContent` must be an object: tools returning anything else answer in text only,
    // so they publish no output schema a client would check that text against.
    if entry.has_object_output() {
        tool = tool.with_raw_output_schema(schema_object(entry.output_schema()));
    }
    tool
}

/// Absent `destructiveHint` and `openWorldHint` mean `true` in MCP, so every hint is explicit.
fn annotations(entry: &ToolEntry) -> ToolAnnotations {
    let effect = entry.effect();
    let mut annotations = ToolAnnotations::new()
        .read_only(effect.is_read_only())
        .destructive(effect == carmy_core::Effect::Destructive)
        .idempotent(entry.idempotent())
        .open_world(effect == carmy_core::Effect::ExternalWrite);
    // Clients of 2025-03-26 read the title from the annotations only.
    annotations.title = entry.title().map(Into::into);
    annotations
}

fn tool_meta(entry: &ToolEntry) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.insert(META_EFFECT.into(), entry.effect().as_str().into());
    meta.insert(
        META_CONFIRMATION.into(),
        entry.confirmation().as_str().into(),
    );
    meta.insert(META_PARALLEL_SAFE.into(), entry.parallel_safe().into());
    meta
}

/// MCP carries schemas as JSON objects; the boolean schemas `true`/`false` get their object
/// spelling.
fn schema_object(schema: &Arc<Value>) -> Arc<JsonObject> {
    Arc::new(match &**schema {
        Value::Object(object) => object.clone(),
        Value::Bool(false) => json!({ "not": {} })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        _ => Map::new(),
    })
}

/// An outcome as the answer to `tools/call`. A call the runtime could not route (no such tool)
/// is a protocol error, `-32602`; everything else, failures included, is a result.
pub(crate) fn call_result(
    entry: Option<&ToolEntry>,
    outcome: Outcome,
) -> Result<CallToolResult, ErrorData> {
    let mut meta = MetaObject::new();
    meta.insert(
        META_EXECUTION_ID.into(),
        outcome.execution_id.as_str().into(),
    );
    meta.insert(META_STATUS.into(), outcome.status.as_str().into());
    let result = match outcome.result {
        Ok(value) => {
            // Written straight into a buffer: `Value`'s `Display` goes through `fmt::Write`, a
            // call per token.
            let text = serde_json::to_string(&value).unwrap_or_else(|_| value.to_string());
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            if value.is_object() && entry.is_some_and(ToolEntry::has_object_output) {
                // structuredContent, and the same JSON as text for clients that only read text.
                result.structured_content = Some(value);
            }
            result
        }
        Err(error) if error.code() == codes::TOOL_NOT_FOUND => {
            return Err(unknown_tool(&error));
        }
        Err(error) => {
            let envelope = error.to_envelope();
            meta.insert(META_ERROR.into(), envelope["error"].clone());
            // Never structuredContent: clients check it against the tool's output schema.
            CallToolResult::error(vec![ContentBlock::text(envelope.to_string())])
        }
    };
    Ok(result.with_meta(Some(meta)))
}

fn unknown_tool(error: &AgentError) -> ErrorData {
    ErrorData::invalid_params(error.message().to_owned(), Some(error.to_envelope()))
}
