//! What an outcome weighs in memory, and the note kept in place of one too large to keep:
//! shared by the in-memory stores of claims and of tasks, which bound what they hold in bytes.

use serde_json::Value;

use super::Recorded;
use crate::error::{AgentError, ErrorCategory, codes};

/// The note kept for an outcome too large to keep: the call ran, under this execution id.
pub(crate) fn not_kept(recorded: Recorded, size: usize) -> Recorded {
    let error = AgentError::new(
        ErrorCategory::Conflict,
        codes::OUTCOME_NOT_KEPT,
        format!(
            "this request id's call ran once (execution {}, {}), but its outcome ({size} bytes) \
             was too large to keep for replay; check the current state before calling again \
             with a new request id",
            recorded.execution_id, recorded.status
        ),
    )
    .with_details(serde_json::json!({
        "execution_id": recorded.execution_id.as_str(),
        "status": recorded.status,
        "bytes": size,
    }));
    Recorded::new(recorded.execution_id, recorded.status, Err(error))
}

/// About what `recorded` takes in memory.
pub(crate) fn outcome_bytes(recorded: &Recorded) -> usize {
    NODE + recorded.execution_id.as_str().len()
        + match &recorded.result {
            Ok(output) => value_bytes(output),
            Err(error) => {
                error.code().len()
                    + error.message().len()
                    + error.details().map_or(0, value_bytes)
                    + error.next_tool().map_or(0, str::len)
            }
        }
}

const NODE: usize = 16;

/// About what `node` takes in memory: its strings, and a word or so per node.
pub(crate) fn value_bytes(node: &Value) -> usize {
    NODE + match node {
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(value_bytes).sum(),
        Value::Object(members) => members
            .iter()
            .map(|(name, member)| name.len() + value_bytes(member))
            .sum(),
        _ => 0,
    }
}
