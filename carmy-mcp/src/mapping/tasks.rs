//! Tasks as MCP's tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`, 2026-07-28) sees
//! them: a task record becomes the `CreateTaskResult` that answers `tools/call`, and the
//! `DetailedTask` that answers `tasks/get`.
//!
//! - `status` is the runtime's [`TaskStatus`], word for word: `completed` when the tool
//!   answered (its error included, as `result.isError`, the same result a plain call gets),
//!   `failed` when nobody can give its answer (it panicked, or the replica running it stopped
//!   answering for it), with a JSON-RPC error object (`-32603`, the error envelope as `data`).
//! - `inputRequests` are the task's unanswered questions, under the keys the task gave them
//!   (unique in the task), as the same requests a plain call's `input_required` carries.
//! - `ttlMs` is how long the task is kept once it ended (kept at least that long from its
//!   creation, then), `pollIntervalMs` how often to look; both whole milliseconds.
//! - `_meta` carries the execution (`carmy/execution_id`) and, while the tool reports it, its
//!   progress (`carmy/progress`); never `requestState`, which tasks do not have.

use std::time::SystemTime;

use carmy_core::{AgentError, Asks, Pending, TaskRecord, TaskStatus, ToolEntry, codes};
use rmcp::model::{
    CreateTaskResult, DetailedTask, ErrorData, GetTaskResult, JsonObject, MetaObject, Task,
    TaskPayload, TaskStatus as McpTaskStatus,
};
use serde_json::{Value, json};

use super::{META_EXECUTION_ID, META_PROGRESS, META_STATUS, result::call_result};

/// The answer to a `tools/call` that became a task.
pub(crate) fn create_result(record: &TaskRecord) -> CreateTaskResult {
    let mut meta = MetaObject::new();
    meta.insert(
        META_EXECUTION_ID.into(),
        record.execution_id.as_str().into(),
    );
    meta.insert(META_STATUS.into(), "running".into());
    CreateTaskResult::new(task(record)).with_meta(meta)
}

/// The answer to `tasks/get`: the task, with what its status carries.
pub(crate) fn task_result(entry: Option<&ToolEntry>, record: &TaskRecord) -> GetTaskResult {
    let mut result = GetTaskResult::new(DetailedTask::new(task(record), payload(entry, record)));
    let mut meta = MetaObject::new();
    meta.insert(
        META_EXECUTION_ID.into(),
        record.execution_id.as_str().into(),
    );
    if let Some(progress) = &record.progress {
        meta.insert(
            META_PROGRESS.into(),
            json!({ "done": progress.done, "total": progress.total }),
        );
    }
    result.meta = Some(meta);
    result
}

/// A `tasks/*` request the runtime refused: `-32602` for a task its caller has no such task
/// (unknown, expired, another principal's: the same answer for each), `-32603` when the store
/// failed; the error envelope as `data` either way.
pub(crate) fn task_error(error: &AgentError) -> ErrorData {
    let data = Some(error.to_envelope());
    if error.code() == codes::TASK_NOT_FOUND {
        ErrorData::invalid_params(error.message().to_owned(), data)
    } else {
        ErrorData::internal_error(error.message().to_owned(), data)
    }
}

fn task(record: &TaskRecord) -> Task {
    let mut task = Task::new(
        record.key.id().as_str(),
        status(record.status),
        timestamp(record.created_at),
        timestamp(record.updated_at),
    )
    .with_ttl_ms(millis(record.ttl))
    .with_poll_interval_ms(millis(record.poll_interval).max(1));
    task.status_message = record.status_message.clone();
    task
}

fn status(status: TaskStatus) -> McpTaskStatus {
    match status {
        TaskStatus::InputRequired => McpTaskStatus::InputRequired,
        TaskStatus::Completed => McpTaskStatus::Completed,
        TaskStatus::Failed => McpTaskStatus::Failed,
        TaskStatus::Cancelled => McpTaskStatus::Cancelled,
        _ => McpTaskStatus::Working,
    }
}

fn payload(entry: Option<&ToolEntry>, record: &TaskRecord) -> TaskPayload {
    let outcome = record.outcome.as_ref();
    match (record.status, outcome) {
        (TaskStatus::Completed, Some(outcome)) => TaskPayload::Completed {
            result: object(call_result(
                entry,
                &outcome.execution_id,
                outcome.status,
                outcome.result.clone(),
            )),
        },
        (TaskStatus::Failed, Some(outcome)) => {
            let error = match &outcome.result {
                Err(error) => error.clone(),
                Ok(_) => AgentError::internal("the task failed"),
            };
            TaskPayload::Failed {
                error: object(ErrorData::internal_error(
                    error.message().to_owned(),
                    Some(error.to_envelope()),
                )),
            }
        }
        (TaskStatus::Cancelled, _) => TaskPayload::Cancelled,
        (TaskStatus::InputRequired, _) => match input_requests(record) {
            Some(input_requests) => TaskPayload::InputRequired { input_requests },
            None => TaskPayload::Working,
        },
        _ => TaskPayload::Working,
    }
}

/// The questions still unanswered as `inputRequests`; `None` when none can be put (a tool's
/// question that no MCP client accepts is left out, and said in the log).
fn input_requests(record: &TaskRecord) -> Option<rmcp::model::InputRequests> {
    let mut requests = rmcp::model::InputRequests::new();
    for (key, ask) in record.pending() {
        match super::input_requests(&Pending::new(Asks::new().with(key, ask.clone()), None)) {
            Ok(mapped) => requests.extend(mapped),
            Err(error) => {
                tracing::warn!(%error, task_id = %record.key.id(), key, "a task's question cannot be put to the client")
            }
        }
    }
    (!requests.is_empty()).then_some(requests)
}

fn object(value: impl serde::Serialize) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// ISO 8601 in UTC, to the millisecond: `2026-07-28T10:30:00.000Z`.
fn timestamp(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use std::{collections::BTreeMap, time::Duration};

    use carmy_core::{
        Ask, ExecutionId, ExecutionStatus, NewTask, Recorded, TaskEnding, TaskKey, TaskProgress,
    };

    use super::*;

    fn record() -> TaskRecord {
        let task = NewTask::new(
            TaskKey::new(Some("alice"), "task_0123"),
            "slow_compute",
            ExecutionId::from("exec_1"),
            Duration::from_secs(3600),
            Duration::from_millis(500),
        );
        TaskRecord::created(task, SystemTime::UNIX_EPOCH + Duration::from_millis(1_500))
    }

    fn wire(result: &GetTaskResult) -> Value {
        serde_json::to_value(result).unwrap()
    }

    #[test]
    fn a_created_task_is_flat_and_speaks_in_milliseconds() {
        let created = serde_json::to_value(create_result(&record())).unwrap();
        assert_eq!(
            created,
            json!({
                "resultType": "task",
                "taskId": "task_0123",
                "status": "working",
                "createdAt": "1970-01-01T00:00:01.500Z",
                "lastUpdatedAt": "1970-01-01T00:00:01.500Z",
                "ttlMs": 3_600_000,
                "pollIntervalMs": 500,
                "_meta": { "carmy/execution_id": "exec_1", "carmy/status": "running" },
            })
        );
    }

    #[test]
    fn each_status_carries_its_payload() {
        let mut waiting = record();
        let form = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
        waiting.set_questions(
            Asks::new()
                .with("ok.1", Ask::input("Sure?", form.clone()))
                .with("ok.2", Ask::input("Really?", form)),
            SystemTime::UNIX_EPOCH,
        );
        waiting.take_answers(
            BTreeMap::from([("ok.1".to_owned(), json!({ "action": "accept" }))]),
            SystemTime::UNIX_EPOCH,
        );
        waiting.progress = Some(TaskProgress {
            done: 1.0,
            total: Some(2.0),
        });
        let get = wire(&task_result(None, &waiting));
        assert_eq!(get["status"], "input_required");
        assert_eq!(get["resultType"], "complete");
        let requests = get["inputRequests"].as_object().unwrap();
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["ok.2"]);
        assert_eq!(requests["ok.2"]["method"], "elicitation/create");
        assert_eq!(
            get["_meta"]["carmy/progress"],
            json!({ "done": 1.0, "total": 2.0 })
        );
        assert!(get.get("result").is_none() && get.get("requestState").is_none());

        let mut failed_tool = record();
        failed_tool.end(
            TaskEnding::new(Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Failed,
                Err(AgentError::internal("it broke")),
            )),
            SystemTime::UNIX_EPOCH,
        );
        let get = wire(&task_result(None, &failed_tool));
        assert_eq!(get["status"], "completed");
        assert_eq!(get["result"]["isError"], true);
        assert_eq!(get["result"]["_meta"]["carmy/status"], "failed");
        assert!(get.get("error").is_none());

        let mut lost = record();
        lost.end(
            TaskEnding::lost(ExecutionId::from("exec_1")),
            SystemTime::UNIX_EPOCH,
        );
        let get = wire(&task_result(None, &lost));
        assert_eq!(get["status"], "failed");
        assert_eq!(get["error"]["code"], -32603);
        assert_eq!(get["error"]["data"]["error"]["code"], "EXECUTION_LOST");
        assert!(get.get("result").is_none());

        let mut cancelled = record();
        cancelled.end(
            TaskEnding::new(Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Cancelled,
                Err(AgentError::internal("stopped")),
            )),
            SystemTime::UNIX_EPOCH,
        );
        let get = wire(&task_result(None, &cancelled));
        assert_eq!(get["status"], "cancelled");
        assert!(get.get("result").is_none() && get.get("error").is_none());
    }
}
