//! A finished execution's outcome as a store keeps it: JSON text that reads back into the very
//! same [`Recorded`].
//!
//! `AgentError`'s own serde form is its wire form, and it is not quite lossless: `details:
//! Some(null)` is written `"details": null` and read back as `None`. A replay must be the
//! outcome itself, so the stored form spells every field out (an error's details in a
//! one-element array, so `null` stays a value) and the wire form stays untouched.
//!
//! The other things every durable store writes the same way live here too: a status as text,
//! and what a key weighs in its principal's share.

use carmy_core::{AgentError, ErrorCategory, ExecutionId, ExecutionStatus, Recorded, codes};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a durable store writes for a [`Recorded`].
#[derive(Serialize, Deserialize)]
struct StoredOutcome {
    execution_id: ExecutionId,
    status: ExecutionStatus,
    result: StoredResult,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredResult {
    Ok(Value),
    Err(StoredError),
}

#[derive(Serialize, Deserialize)]
struct StoredError {
    code: String,
    message: String,
    category: ErrorCategory,
    retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<[Value; 1]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_tool: Option<String>,
}

/// `recorded` as JSON text, for [`decode`] to read back.
pub(crate) fn encode(recorded: &Recorded) -> Result<String, serde_json::Error> {
    let result = match &recorded.result {
        Ok(output) => StoredResult::Ok(output.clone()),
        Err(error) => StoredResult::Err(StoredError {
            code: error.code().to_owned(),
            message: error.message().to_owned(),
            category: error.category(),
            retryable: error.retryable(),
            details: error.details().map(|details| [details.clone()]),
            next_tool: error.next_tool().map(str::to_owned),
        }),
    };
    serde_json::to_string(&StoredOutcome {
        execution_id: recorded.execution_id.clone(),
        status: recorded.status,
        result,
    })
}

/// The [`Recorded`] that [`encode`] wrote as `text`.
pub(crate) fn decode(text: &str) -> Result<Recorded, serde_json::Error> {
    let stored: StoredOutcome = serde_json::from_str(text)?;
    let result = match stored.result {
        StoredResult::Ok(output) => Ok(output),
        StoredResult::Err(error) => {
            let mut agent = AgentError::new(error.category, error.code, error.message)
                .with_retryable(error.retryable);
            if let Some([details]) = error.details {
                agent = agent.with_details(details);
            }
            if let Some(next_tool) = error.next_tool {
                agent = agent.with_next_tool(next_tool);
            }
            Err(agent)
        }
    };
    Ok(Recorded::new(stored.execution_id, stored.status, result))
}

/// What a key counts for in its principal's share before its outcome: the key, and the row
/// and index bookkeeping. One measure for every durable store, so moving from one to another
/// changes where keys live, not how many fit.
pub(crate) fn key_bytes(key: &carmy_core::IdempotencyKey) -> usize {
    const OVERHEAD: usize = 128;
    OVERHEAD + key.principal().len() + key.request_id().len()
}

/// The note kept instead of an outcome too large to keep: the call ran, under this execution
/// id, so its retries must not run it again (as `MemoryStore` does).
pub(crate) fn not_kept(recorded: &Recorded, size: usize) -> Recorded {
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
    Recorded::new(recorded.execution_id.clone(), recorded.status, Err(error))
}

/// A status as its serde form names it (`lost`, `timed_out`), the text [`status_from`] reads:
/// what a store keeps for an uncertain key and a claim's terms.
pub(crate) fn status_text(status: ExecutionStatus) -> Result<String, serde_json::Error> {
    match serde_json::to_value(status)? {
        Value::String(text) => Ok(text),
        other => Err(serde::ser::Error::custom(format!(
            "a status written as {other}"
        ))),
    }
}

/// The status [`status_text`] wrote as `text`.
pub(crate) fn status_from(text: &str) -> Result<ExecutionStatus, serde_json::Error> {
    serde_json::from_value(Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(recorded: Recorded) {
        let text = encode(&recorded).unwrap();
        assert_eq!(decode(&text).unwrap(), recorded, "{text}");
    }

    #[test]
    fn outputs_round_trip_exactly() {
        for output in [
            json!(null),
            json!({ "a": [1, -2, 3.5, 0.1, 1e-300, f64::MAX, u64::MAX, i64::MIN], "b": "é\u{0}\n" }),
            json!(0.1 + 0.2),
            json!(-0.0),
        ] {
            round_trip(Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Succeeded,
                Ok(output),
            ));
        }
    }

    #[test]
    fn errors_round_trip_exactly_even_with_null_details() {
        let plain = AgentError::validation("QUANTITY_TOO_LARGE", "at most 10");
        let full = AgentError::new(ErrorCategory::Unavailable, "PAYMENTS_DOWN", "later")
            .with_retryable(false)
            .with_details(json!({ "retry_after": 3 }))
            .with_next_tool("get_order");
        let null_details = AgentError::conflict("C", "m").with_details(Value::Null);
        for error in [plain, full, null_details] {
            round_trip(Recorded::new(
                ExecutionId::from("exec_2"),
                ExecutionStatus::Failed,
                Err(error),
            ));
        }
        // The wire form would not have kept `Some(null)`: that is why the stored form exists.
        let wire =
            serde_json::to_value(AgentError::conflict("C", "m").with_details(Value::Null)).unwrap();
        let back: AgentError = serde_json::from_value(wire).unwrap();
        assert_eq!(back.details(), None);
    }

    #[test]
    fn every_status_round_trips() {
        for status in [
            ExecutionStatus::Succeeded,
            ExecutionStatus::Failed,
            ExecutionStatus::Lost,
            ExecutionStatus::TimedOut,
            ExecutionStatus::Cancelled,
            ExecutionStatus::Panicked,
        ] {
            round_trip(Recorded::new(ExecutionId::from("e"), status, Ok(json!(1))));
            assert_eq!(status_from(&status_text(status).unwrap()).unwrap(), status);
        }
    }
}
