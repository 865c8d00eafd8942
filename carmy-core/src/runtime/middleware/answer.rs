//! `Answer`: a request's outcome as middleware sees it.

use serde_json::Value;

use crate::{
    completion::Completions,
    error::AgentError,
    execution::{ExecutionId, ExecutionStatus},
    outcome::{Outcome, OutcomeKind},
    prompt::Messages,
    resource::Contents,
};

/// The outcome of one request, as [middleware](super::Middleware) sees it: one per operation,
/// with what they share.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Answer {
    /// A tool call's.
    CallTool(Outcome<Value>),
    /// A resource read's.
    ReadResource(Outcome<Contents>),
    /// A prompt get's.
    GetPrompt(Outcome<Messages>),
    /// A completion's.
    Complete(Outcome<Completions>),
}

/// `$body` with `$outcome` bound to the outcome, whichever operation it answers.
macro_rules! each {
    ($answer:expr, $outcome:pat => $body:expr) => {
        match $answer {
            Answer::CallTool($outcome) => $body,
            Answer::ReadResource($outcome) => $body,
            Answer::GetPrompt($outcome) => $body,
            Answer::Complete($outcome) => $body,
        }
    };
}

impl Answer {
    /// How the execution ended.
    pub fn status(&self) -> ExecutionStatus {
        each!(self, outcome => outcome.status)
    }

    /// The execution that produced it (for a replay, the original execution).
    pub fn execution_id(&self) -> &ExecutionId {
        each!(self, outcome => &outcome.execution_id)
    }

    /// The error, if it failed.
    pub fn error(&self) -> Option<&AgentError> {
        each!(self, outcome => outcome.error())
    }

    /// How an adapter delivers it.
    pub fn kind(&self) -> &OutcomeKind {
        each!(self, outcome => &outcome.kind)
    }

    /// The same answer with its result replaced by `error`, status `failed`, delivered as a
    /// result: what the caller gets in place of an output a middleware withholds.
    #[must_use]
    pub fn fail(self, error: AgentError) -> Self {
        each!(self, mut outcome => {
            outcome.result = Err(error);
            outcome.status = ExecutionStatus::Failed;
            outcome.kind = OutcomeKind::Result;
            outcome.into()
        })
    }
}

/// An outcome of one operation, out of the answer a middleware gave for a request of that
/// operation.
pub(in crate::runtime) trait FromAnswer: Sized {
    fn from_answer(answer: Answer) -> Self;
}

/// What the caller gets when a middleware answered with another operation's answer: an
/// internal error, under the answer's execution id.
fn mismatched<T>(answer: &Answer, expected: &str) -> Outcome<T> {
    Outcome {
        execution_id: answer.execution_id().clone(),
        status: ExecutionStatus::Failed,
        result: Err(AgentError::internal(format!(
            "a middleware answered a {expected} with another operation's answer"
        ))),
        kind: OutcomeKind::Result,
    }
}

macro_rules! from_answer {
    ($output:ty, $variant:ident, $what:literal) => {
        impl FromAnswer for Outcome<$output> {
            fn from_answer(answer: Answer) -> Self {
                match answer {
                    Answer::$variant(outcome) => outcome,
                    other => mismatched(&other, $what),
                }
            }
        }
    };
}

from_answer!(Value, CallTool, "tool call");
from_answer!(Contents, ReadResource, "resource read");
from_answer!(Messages, GetPrompt, "prompt get");
from_answer!(Completions, Complete, "completion");

impl From<Outcome<Value>> for Answer {
    fn from(outcome: Outcome<Value>) -> Self {
        Answer::CallTool(outcome)
    }
}

impl From<Outcome<Contents>> for Answer {
    fn from(outcome: Outcome<Contents>) -> Self {
        Answer::ReadResource(outcome)
    }
}

impl From<Outcome<Messages>> for Answer {
    fn from(outcome: Outcome<Messages>) -> Self {
        Answer::GetPrompt(outcome)
    }
}

impl From<Outcome<Completions>> for Answer {
    fn from(outcome: Outcome<Completions>) -> Self {
        Answer::Complete(outcome)
    }
}
