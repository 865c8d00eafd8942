//! A task's record as a durable store keeps it: JSON text that reads back into the very same
//! [`TaskRecord`], for every store (SQLite, PostgreSQL, Redis) to write the same way.
//!
//! The record's rules (what a renewal, an answer, a cancel or an ending change) are
//! `carmy_core`'s, on [`TaskRecord`] itself; a store loads the record, applies them, and saves
//! it. This module is only the form on disk. Times are milliseconds since the epoch; the
//! outcome is `crate::outcome`'s stored form (lossless, unlike `AgentError`'s wire form); a
//! question's messages keep their content in `ToolContent`'s JSON form.

use std::{
    collections::BTreeMap,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use carmy_core::{
    Ask, Asks, ExecutionId, Message, NewTask, Role, TaskKey, TaskProgress, TaskRecord, TaskStatus,
    ToolContent,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::outcome;

#[derive(Serialize, Deserialize)]
struct StoredTask {
    principal: String,
    id: String,
    tool: String,
    execution_id: ExecutionId,
    status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    progress: Option<TaskProgress>,
    created_at_ms: u64,
    updated_at_ms: u64,
    ttl_ms: u64,
    poll_interval_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    questions: Vec<(String, StoredAsk)>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    answers: BTreeMap<String, Value>,
    /// `crate::outcome`'s text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<String>,
    #[serde(default)]
    cancel_requested: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum StoredAsk {
    Input {
        message: String,
        schema: Value,
    },
    Sample {
        messages: Vec<StoredMessage>,
        max_tokens: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system_prompt: Option<String>,
    },
    Roots,
}

#[derive(Serialize, Deserialize)]
struct StoredMessage {
    /// `user` or `assistant`.
    role: String,
    /// `ToolContent`'s JSON form of the one block.
    content: Value,
}

/// Why a stored task cannot be written or read back.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TaskFormError {
    #[error("a task record is not valid JSON of its form: {0}")]
    Json(#[from] serde_json::Error),
    #[error("a task record cannot be kept: {0}")]
    Invalid(String),
}

/// `record` as JSON text, for [`decode`] to read back.
pub(crate) fn encode(record: &TaskRecord) -> Result<String, TaskFormError> {
    let questions = record
        .questions
        .iter()
        .map(|(key, ask)| Ok((key.to_owned(), stored_ask(ask)?)))
        .collect::<Result<_, TaskFormError>>()?;
    let stored = StoredTask {
        principal: record.key.principal().to_owned(),
        id: record.key.id().as_str().to_owned(),
        tool: record.tool.clone(),
        execution_id: record.execution_id.clone(),
        status: record.status,
        status_message: record.status_message.clone(),
        progress: record.progress,
        created_at_ms: millis_since_epoch(record.created_at),
        updated_at_ms: millis_since_epoch(record.updated_at),
        ttl_ms: millis(record.ttl),
        poll_interval_ms: millis(record.poll_interval),
        questions,
        answers: record.answers.clone(),
        outcome: record.outcome.as_ref().map(outcome::encode).transpose()?,
        cancel_requested: record.cancel_requested,
    };
    Ok(serde_json::to_string(&stored)?)
}

/// The [`TaskRecord`] that [`encode`] wrote as `text`.
pub(crate) fn decode(text: &str) -> Result<TaskRecord, TaskFormError> {
    let stored: StoredTask = serde_json::from_str(text)?;
    let key = TaskKey::new(Some(&stored.principal), stored.id.as_str());
    let mut task = NewTask::new(
        key,
        stored.tool,
        stored.execution_id,
        Duration::from_millis(stored.ttl_ms),
        Duration::from_millis(stored.poll_interval_ms),
    );
    task.status_message = stored.status_message;
    let mut record = TaskRecord::created(task, at(stored.created_at_ms));
    record.status = stored.status;
    record.progress = stored.progress;
    record.updated_at = at(stored.updated_at_ms);
    let mut questions = Asks::new();
    for (key, ask) in stored.questions {
        questions = questions.with(key, ask_from(ask)?);
    }
    record.questions = questions;
    record.answers = stored.answers;
    record.outcome = stored.outcome.as_deref().map(outcome::decode).transpose()?;
    record.cancel_requested = stored.cancel_requested;
    Ok(record)
}

fn stored_ask(ask: &Ask) -> Result<StoredAsk, TaskFormError> {
    Ok(match ask {
        Ask::Input { message, schema } => StoredAsk::Input {
            message: message.clone(),
            schema: schema.clone(),
        },
        Ask::Sample {
            messages,
            max_tokens,
            system_prompt,
        } => StoredAsk::Sample {
            messages: messages
                .iter()
                .map(|message| {
                    let role = match message.role() {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                        other => {
                            return Err(TaskFormError::Invalid(format!(
                                "a message from {other:?} has no stored form"
                            )));
                        }
                    };
                    let content =
                        serde_json::to_value(ToolContent::from(message.content().clone()))?;
                    Ok(StoredMessage {
                        role: role.to_owned(),
                        content,
                    })
                })
                .collect::<Result<_, _>>()?,
            max_tokens: *max_tokens,
            system_prompt: system_prompt.clone(),
        },
        Ask::Roots => StoredAsk::Roots,
        other => {
            return Err(TaskFormError::Invalid(format!(
                "a question of kind `{}` has no stored form",
                other.kind().as_str()
            )));
        }
    })
}

fn ask_from(stored: StoredAsk) -> Result<Ask, TaskFormError> {
    Ok(match stored {
        StoredAsk::Input { message, schema } => Ask::input(message, schema),
        StoredAsk::Sample {
            messages,
            max_tokens,
            system_prompt,
        } => {
            let messages = messages
                .into_iter()
                .map(|stored| {
                    let role = match stored.role.as_str() {
                        "user" => Role::User,
                        "assistant" => Role::Assistant,
                        other => {
                            return Err(TaskFormError::Invalid(format!(
                                "a message from `{other}`"
                            )));
                        }
                    };
                    let mut blocks = ToolContent::from_json(&stored.content)?.into_iter();
                    match (blocks.next(), blocks.next()) {
                        (Some(block), None) => Ok(Message::new(role, block)),
                        _ => Err(TaskFormError::Invalid(
                            "a message holds exactly one block".into(),
                        )),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut ask = Ask::sample("", max_tokens);
            if let Ask::Sample {
                messages: kept,
                system_prompt: kept_prompt,
                ..
            } = &mut ask
            {
                *kept = messages;
                *kept_prompt = system_prompt;
            }
            ask
        }
        StoredAsk::Roots => Ask::Roots,
    })
}

/// What a task counts for in its principal's share: its stored text, and the row and index
/// bookkeeping. One measure for every durable task store, so moving from one to another changes
/// where tasks live, not how many fit.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn stored_bytes(text: &str) -> usize {
    const OVERHEAD: usize = 128;
    OVERHEAD + text.len()
}

/// The instant `ms` milliseconds after the epoch.
pub(crate) fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// `time` in milliseconds since the epoch (0 before it).
pub(crate) fn millis_since_epoch(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, millis)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use carmy_core::{AgentError, ErrorCategory, ExecutionStatus, Recorded, TaskEnding, TaskId};
    use serde_json::json;

    fn record() -> TaskRecord {
        let key = TaskKey::new(Some("alice"), TaskId::generate());
        let mut task = NewTask::new(
            key,
            "confirm_delete",
            ExecutionId::from("exec_1"),
            Duration::from_secs(300),
            Duration::from_millis(1500),
        );
        task.status_message = Some("starting".into());
        TaskRecord::created(task, at(1_764_000_000_123))
    }

    fn round_trip(record: &TaskRecord) {
        let text = encode(record).unwrap();
        assert_eq!(&decode(&text).unwrap(), record, "{text}");
    }

    #[test]
    fn a_fresh_task_round_trips() {
        round_trip(&record());
        let anonymous = TaskRecord::created(
            NewTask::new(
                TaskKey::new(None, "task_x"),
                "t",
                ExecutionId::from("e"),
                Duration::ZERO,
                Duration::ZERO,
            ),
            at(0),
        );
        round_trip(&anonymous);
    }

    #[test]
    fn questions_answers_progress_and_cancels_round_trip() {
        let mut record = record();
        let image = Message::image(Role::User, vec![0u8, 1, 2, 255], "image/png");
        let mut sample = Ask::sample("Summarise", 200);
        if let Ask::Sample {
            messages,
            system_prompt,
            ..
        } = &mut sample
        {
            messages.push(Message::assistant("Sure."));
            messages.push(image);
            *system_prompt = Some("Be brief.".into());
        }
        let questions = Asks::new()
            .with(
                "confirm.1",
                Ask::input("Delete it?", json!({ "type": "object", "properties": {} })),
            )
            .with("sample.1", sample)
            .with("roots.1", Ask::Roots);
        record.set_questions(questions, at(1_764_000_001_000));
        record.answers.insert(
            "confirm.1".into(),
            json!({ "action": "accept", "content": { "ok": true } }),
        );
        record.progress = Some(TaskProgress {
            done: 0.1 + 0.2,
            total: Some(3.0),
        });
        record.cancel_requested = true;
        round_trip(&record);
    }

    #[test]
    fn endings_round_trip_with_their_outcome_exactly() {
        for outcome in [
            Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Succeeded,
                Ok(json!({ "deleted": true, "n": u64::MAX })),
            ),
            Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Failed,
                Err(AgentError::new(ErrorCategory::Conflict, "C", "m").with_details(json!(null))),
            ),
        ] {
            let mut record = record();
            record.end(TaskEnding::new(outcome), at(1_764_000_009_000));
            round_trip(&record);
        }
        let mut lost = record();
        lost.end(
            TaskEnding::lost(ExecutionId::from("exec_1")),
            at(1_764_000_009_000),
        );
        assert_eq!(lost.status, TaskStatus::Failed);
        round_trip(&lost);
    }

    #[test]
    fn a_record_that_is_not_of_the_form_is_refused() {
        assert!(decode("{}").is_err());
        assert!(decode("not json").is_err());
    }
}
