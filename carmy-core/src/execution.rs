//! Executions: their ids, their kinds and their statuses.

use std::{
    fmt,
    sync::{
        Arc, LazyLock,
        atomic::{AtomicU64, Ordering},
    },
};

use serde::{Deserialize, Serialize};

/// A unique id for one execution, e.g. `exec_5f0c...`. Replays carry the id of the execution
/// they replay.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ExecutionId(Arc<str>);

impl Serialize for ExecutionId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ExecutionId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|id| Self(id.into()))
    }
}

impl ExecutionId {
    /// A fresh id: a random per-process prefix, then a counter. Unique across processes and
    /// ordered within one, without a system call per execution (ids are labels, not secrets).
    pub fn generate() -> Self {
        static PREFIX: LazyLock<u64> = LazyLock::new(|| uuid::Uuid::new_v4().as_u64_pair().0);
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let sequence = NEXT.fetch_add(1, Ordering::Relaxed);
        // Formatted on the stack: one allocation per id, the `Arc<str>`'s.
        let mut value = [0u8; 16];
        value[..8].copy_from_slice(&PREFIX.to_be_bytes());
        value[8..].copy_from_slice(&sequence.to_be_bytes());
        let mut id = *b"exec_00000000000000000000000000000000";
        hex::encode_to_slice(value, &mut id[5..]).expect("16 bytes are 32 hex digits");
        Self(std::str::from_utf8(&id).expect("ASCII").into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for ExecutionId {
    fn from(id: &str) -> Self {
        Self(id.into())
    }
}

impl fmt::Display for ExecutionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ExecutionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// What an execution ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExecutionKind {
    /// A tool call.
    Tool,
    /// A resource read.
    Read,
    /// A prompt got (`prompts/get`): its messages rendered.
    Prompt,
    /// Values suggested for an argument.
    Complete,
}

impl ExecutionKind {
    /// The name used in logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Read => "read",
            Self::Prompt => "prompt",
            Self::Complete => "complete",
        }
    }
}

/// Where an execution stands, or how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExecutionStatus {
    /// The tool is running.
    Running,
    /// The tool returned a result.
    Succeeded,
    /// The tool returned an error, or output that broke its schema.
    Failed,
    /// The runtime refused the call before the tool ran (unknown tool, bad arguments, missing
    /// confirmation, idempotency conflict, capacity).
    Rejected,
    /// The execution was cancelled; the tool was stopped.
    Cancelled,
    /// The execution passed its deadline; the tool was stopped.
    TimedOut,
    /// The tool panicked.
    Panicked,
    /// The outcome of an earlier execution with the same request id, replayed.
    Replayed,
    /// The caller must answer first: the tool needs confirmation and the human was asked (the
    /// tool did not run), or the tool asked questions and was stopped there. Calling again with
    /// the answers is a new execution.
    InputRequired,
    /// Nobody can say how it ended: the process running it stopped answering for it (its claim
    /// on the request id expired). Its effects, if any, are unknown.
    Lost,
}

impl ExecutionStatus {
    /// The name used in logs and `_meta`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Rejected => "rejected",
            Self::Cancelled => "cancelled",
            Self::TimedOut => "timed_out",
            Self::Panicked => "panicked",
            Self::Replayed => "replayed",
            Self::InputRequired => "input_required",
            Self::Lost => "lost",
        }
    }

    /// True for executions stopped before the tool could finish: its effects, if any, are
    /// unknown.
    pub const fn is_interrupted(self) -> bool {
        matches!(
            self,
            Self::Cancelled | Self::TimedOut | Self::Panicked | Self::Lost
        )
    }
}

impl fmt::Display for ExecutionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_shaped_alike() {
        let a = ExecutionId::generate();
        let b = ExecutionId::generate();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), "exec_".len() + 32);
        assert_eq!(
            a.as_str()[..21],
            b.as_str()[..21],
            "one process, one prefix"
        );
        let sequence = |id: &ExecutionId| u64::from_str_radix(&id.as_str()[21..], 16).unwrap();
        assert!(sequence(&b) > sequence(&a), "{a} then {b}");
        assert!(
            a.as_str()[5..]
                .bytes()
                .all(|digit| matches!(digit, b'0'..=b'9' | b'a'..=b'f')),
            "{a}"
        );
    }
}
