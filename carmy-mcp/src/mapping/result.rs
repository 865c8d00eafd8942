//! A tool's result as `tools/call` answers it, and `tasks/result` once its task ended: its output
//! (as text, and as `structuredContent` for an object output), its content blocks, or its error.

use carmy_core::{AgentError, ExecutionId, ExecutionStatus, ToolContent, ToolEntry};
use rmcp::model::{CallToolResult, ContentBlock as McpBlock, MetaObject};

use super::{META_ERROR, META_EXECUTION_ID, META_STATUS, content::block};

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
