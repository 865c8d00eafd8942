//! What a task store keeps and hands back: the task's record and the values its calls take.

use std::{
    collections::BTreeMap,
    fmt,
    sync::Arc,
    time::{Duration, SystemTime},
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    ask::{Ask, Asks},
    error::AgentError,
    execution::{ExecutionId, ExecutionStatus},
    idempotency::Recorded,
};

/// A task's id: `task_` and 128 random bits in hex. Unguessable, so that holding one is the
/// only way to name a task; and scoped to its owner all the same ([`TaskKey`]).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(Arc<str>);

impl TaskId {
    /// A fresh id from the operating system's random number generator.
    ///
    /// # Panics
    /// When the operating system gives no randomness: no id would then be safe to hand out.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the operating system's random number generator");
        let mut id = String::with_capacity(5 + 32);
        id.push_str("task_");
        for byte in bytes {
            id.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
            id.push(char::from(b"0123456789abcdef"[usize::from(byte & 0xf)]));
        }
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for TaskId {
    fn from(id: &str) -> Self {
        Self(id.into())
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for TaskId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TaskId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|id| Self(id.into()))
    }
}

/// Who asks, and for which task. A task is found only under its owner's key: another
/// principal holding the id finds nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TaskKey {
    principal: Arc<str>,
    id: TaskId,
}

impl TaskKey {
    /// The key of task `id` asked for by `principal` (`None`: the anonymous principal).
    pub fn new(principal: Option<&str>, id: impl Into<TaskId>) -> Self {
        Self {
            principal: principal.unwrap_or_default().into(),
            id: id.into(),
        }
    }

    /// The principal, empty for anonymous callers.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The task.
    pub fn id(&self) -> &TaskId {
        &self.id
    }
}

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// The tool is running.
    Working,
    /// The tool waits for answers to its questions ([`TaskRecord::pending`]).
    InputRequired,
    /// The tool answered: a result, or its error (the runtime's refusals and deadlines
    /// included, as a plain call would have answered them).
    Completed,
    /// Nobody can give the tool's answer: it panicked, or the replica running it stopped
    /// answering for it.
    Failed,
    /// It was cancelled; the tool was stopped.
    Cancelled,
}

impl TaskStatus {
    /// `working`, `input_required`, `completed`, `failed`, `cancelled`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the task has ended.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The status of a task whose execution ended with `status`.
    const fn ended(status: ExecutionStatus) -> Self {
        match status {
            ExecutionStatus::Cancelled => Self::Cancelled,
            ExecutionStatus::Panicked | ExecutionStatus::Lost => Self::Failed,
            _ => Self::Completed,
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far a running task got: `done` of `total`, if known.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskProgress {
    /// Work done so far.
    pub done: f64,
    /// All the work, if known.
    pub total: Option<f64>,
}

/// What the holder reports of a running task with [`renew`](super::TaskStore::renew).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct TaskReport {
    /// The tool's latest message, replacing the last one when given.
    pub status_message: Option<String>,
    /// The tool's latest progress.
    pub progress: Option<TaskProgress>,
}

impl TaskReport {
    /// A report of `progress`, with a message when the tool gave one.
    pub fn new(progress: Option<TaskProgress>, status_message: Option<String>) -> Self {
        Self {
            status_message,
            progress,
        }
    }
}

/// A task, as its store keeps it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// Its id and owner.
    pub key: TaskKey,
    /// The tool it runs.
    pub tool: String,
    /// The execution it is.
    pub execution_id: ExecutionId,
    /// Where it stands.
    pub status: TaskStatus,
    /// The tool's latest message, if any.
    pub status_message: Option<String>,
    /// The tool's latest progress, if any.
    pub progress: Option<TaskProgress>,
    /// When it was created (the store's clock).
    pub created_at: SystemTime,
    /// When it last changed (the store's clock).
    pub updated_at: SystemTime,
    /// How long it is kept once it ended.
    pub ttl: Duration,
    /// How often a client should look at it.
    pub poll_interval: Duration,
    /// The questions the tool waits on (answered or not), each under a key unique in the
    /// task.
    pub questions: Asks,
    /// The answers delivered to those questions, by key.
    pub answers: BTreeMap<String, Value>,
    /// How it ended, once it did.
    pub outcome: Option<Recorded>,
    /// Whether its owner asked that it be cancelled.
    pub cancel_requested: bool,
}

impl TaskRecord {
    /// The record of a task just created from `task` at `now`.
    pub fn created(task: NewTask, now: SystemTime) -> Self {
        Self {
            key: task.key,
            tool: task.tool,
            execution_id: task.execution_id,
            status: TaskStatus::Working,
            status_message: task.status_message,
            progress: None,
            created_at: now,
            updated_at: now,
            ttl: task.ttl,
            poll_interval: task.poll_interval,
            questions: Asks::new(),
            answers: BTreeMap::new(),
            outcome: None,
            cancel_requested: false,
        }
    }

    /// The questions still waiting for an answer, in the order asked.
    pub fn pending(&self) -> impl Iterator<Item = (&str, &Ask)> {
        self.questions
            .iter()
            .filter(|(key, _)| !self.answers.contains_key(*key))
    }

    /// Records `ending`: the status and the outcome; nothing waits for input any more.
    pub fn end(&mut self, ending: TaskEnding, now: SystemTime) {
        self.status = ending.status;
        self.outcome = Some(ending.outcome);
        self.questions = Asks::new();
        self.answers.clear();
        self.updated_at = now;
    }

    /// Sets the questions waiting for answers, as [`TaskStore::ask`](super::TaskStore::ask)
    /// does: the answers already delivered to a question kept are kept, the others dropped.
    pub fn set_questions(&mut self, questions: Asks, now: SystemTime) {
        self.answers
            .retain(|key, _| questions.iter().any(|(asked, _)| asked == key));
        self.questions = questions;
        self.status = if self.pending().next().is_some() {
            TaskStatus::InputRequired
        } else {
            TaskStatus::Working
        };
        self.updated_at = now;
    }

    /// Takes the `answers` that name a question still waiting, as
    /// [`TaskStore::respond`](super::TaskStore::respond) does; what was taken and ignored.
    pub fn take_answers(&mut self, answers: BTreeMap<String, Value>, now: SystemTime) -> Responded {
        let mut responded = Responded::default();
        for (key, answer) in answers {
            let waiting = !self.status.is_terminal()
                && self.questions.iter().any(|(asked, _)| asked == key)
                && !self.answers.contains_key(&key);
            if waiting {
                self.answers.insert(key.clone(), answer);
                responded.accepted.push(key);
            } else {
                responded.ignored.push(key);
            }
        }
        if !responded.accepted.is_empty() {
            if self.status == TaskStatus::InputRequired && self.pending().next().is_none() {
                self.status = TaskStatus::Working;
            }
            self.updated_at = now;
        }
        responded
    }

    /// Records the holder's `report`, as [`TaskStore::renew`](super::TaskStore::renew) does.
    pub fn apply(&mut self, report: TaskReport, now: SystemTime) {
        if report.status_message.is_some() {
            self.status_message = report.status_message;
        }
        if report.progress.is_some() {
            self.progress = report.progress;
        }
        self.updated_at = now;
    }

    /// What the holder must act on.
    pub fn signals(&self) -> TaskSignals {
        TaskSignals {
            cancel_requested: self.cancel_requested,
            answers: self.answers.clone(),
        }
    }
}

/// A task to create.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NewTask {
    /// Its id and owner.
    pub key: TaskKey,
    /// The tool it runs.
    pub tool: String,
    /// The execution it is.
    pub execution_id: ExecutionId,
    /// How long it is kept once it ended.
    pub ttl: Duration,
    /// How often a client should look at it.
    pub poll_interval: Duration,
    /// Its first message, if any.
    pub status_message: Option<String>,
}

impl NewTask {
    /// Task `key` running `tool` as `execution_id`, kept `ttl` once ended, polled every
    /// `poll_interval`.
    pub fn new(
        key: TaskKey,
        tool: impl Into<String>,
        execution_id: ExecutionId,
        ttl: Duration,
        poll_interval: Duration,
    ) -> Self {
        Self {
            key,
            tool: tool.into(),
            execution_id,
            ttl,
            poll_interval,
            status_message: None,
        }
    }
}

/// A task just created: the holder's lease, and the record as the store keeps it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Created {
    /// What the holder renews.
    pub lease: TaskLease,
    /// The task.
    pub record: TaskRecord,
}

impl Created {
    /// A created task (for stores).
    pub fn new(lease: TaskLease, record: TaskRecord) -> Self {
        Self { lease, record }
    }
}

/// The holder's claim on a running task. A call made with a lease that is no longer the
/// task's holder (it ran out, the task was settled lost) fails with
/// [`StoreError::LeaseLost`](crate::StoreError::LeaseLost).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskLease {
    key: TaskKey,
    token: u128,
}

impl TaskLease {
    /// A lease on `key`; `token` tells this holder from any other.
    pub fn new(key: TaskKey, token: u128) -> Self {
        Self { key, token }
    }

    /// The task held.
    pub fn key(&self) -> &TaskKey {
        &self.key
    }

    /// What tells this holder from any other.
    pub fn token(&self) -> u128 {
        self.token
    }
}

/// What the holder of a running task must act on, read at each renewal.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct TaskSignals {
    /// The owner asked that it be cancelled.
    pub cancel_requested: bool,
    /// The answers delivered to its questions so far, by key.
    pub answers: BTreeMap<String, Value>,
}

/// What [`respond`](super::TaskStore::respond) made of the answers it was given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Responded {
    /// Keys of questions that were waiting: answered now.
    pub accepted: Vec<String>,
    /// Keys of nothing waiting (unknown, answered already, or the task ended): ignored.
    pub ignored: Vec<String>,
}

/// How a task ended: its status and the execution's outcome. The status follows from the
/// outcome ([`TaskStatus`] says how), so stores keep both and decide neither.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskEnding {
    status: TaskStatus,
    outcome: Recorded,
}

impl TaskEnding {
    /// The ending of a task whose execution ended with `outcome`.
    pub fn new(outcome: Recorded) -> Self {
        Self {
            status: TaskStatus::ended(outcome.status),
            outcome,
        }
    }

    /// The ending a store records for a task whose holder's lease ran out before it finished:
    /// `failed`, its execution `lost` (its effects, if any, unknown).
    pub fn lost(execution_id: ExecutionId) -> Self {
        Self::new(Recorded::new(
            execution_id,
            ExecutionStatus::Lost,
            Err(AgentError::execution_lost()),
        ))
    }

    /// The task's last status.
    pub fn status(&self) -> TaskStatus {
        self.status
    }

    /// The execution's outcome.
    pub fn outcome(&self) -> &Recorded {
        &self.outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_random_and_shaped_alike() {
        let (a, b) = (TaskId::generate(), TaskId::generate());
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 5 + 32);
        assert!(a.as_str().starts_with("task_"));
        assert!(a.as_str()[5..].bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn an_ending_follows_from_the_outcome() {
        let ending = |status, result| {
            TaskEnding::new(Recorded::new(ExecutionId::from("e"), status, result)).status()
        };
        let failed = || Err(AgentError::internal("x"));
        assert_eq!(
            ending(ExecutionStatus::Succeeded, Ok(json!(1))),
            TaskStatus::Completed
        );
        // A tool's error is its answer; a deadline or a refusal, the runtime's.
        for status in [
            ExecutionStatus::Failed,
            ExecutionStatus::TimedOut,
            ExecutionStatus::Rejected,
        ] {
            assert_eq!(ending(status, failed()), TaskStatus::Completed, "{status}");
        }
        assert_eq!(
            ending(ExecutionStatus::Cancelled, failed()),
            TaskStatus::Cancelled
        );
        assert_eq!(
            ending(ExecutionStatus::Panicked, failed()),
            TaskStatus::Failed
        );
        let lost = TaskEnding::lost(ExecutionId::from("e"));
        assert_eq!(lost.status(), TaskStatus::Failed);
        assert_eq!(lost.outcome().status, ExecutionStatus::Lost);
    }

    #[test]
    fn answers_are_taken_once_and_only_for_waiting_questions() {
        let key = TaskKey::new(Some("alice"), "task_1");
        let task = NewTask::new(
            key,
            "t",
            ExecutionId::from("e"),
            Duration::from_secs(60),
            Duration::from_secs(1),
        );
        let now = SystemTime::UNIX_EPOCH;
        let mut record = TaskRecord::created(task, now);
        record.set_questions(
            Asks::new().with("a.1", Ask::Roots).with("b.1", Ask::Roots),
            now,
        );
        assert_eq!(record.status, TaskStatus::InputRequired);
        let responded = record.take_answers(
            BTreeMap::from([("a.1".into(), json!(1)), ("zzz".into(), json!(2))]),
            now,
        );
        assert_eq!(responded.accepted, ["a.1"]);
        assert_eq!(responded.ignored, ["zzz"]);
        assert_eq!(record.status, TaskStatus::InputRequired);
        let pending: Vec<_> = record.pending().map(|(key, _)| key).collect();
        assert_eq!(pending, ["b.1"]);
        let again = record.take_answers(
            BTreeMap::from([("a.1".into(), json!(3)), ("b.1".into(), json!(4))]),
            now,
        );
        assert_eq!(
            (again.accepted, again.ignored),
            (vec!["b.1".into()], vec!["a.1".into()])
        );
        assert_eq!(record.status, TaskStatus::Working);
        assert_eq!(record.answers["a.1"], json!(1), "the first answer stands");
        // The holder closes what it took; a new question opens beside the rest.
        record.set_questions(Asks::new().with("c.2", Ask::Roots), now);
        assert_eq!(record.status, TaskStatus::InputRequired);
        assert!(record.answers.is_empty());
        record.end(TaskEnding::lost(ExecutionId::from("e")), now);
        let late = record.take_answers(BTreeMap::from([("b.1".into(), json!(5))]), now);
        assert_eq!(late.ignored, ["b.1"]);
    }
}
