//! `Outcome`: what the runtime hands back for one execution, and how an adapter delivers it.

use serde_json::Value;

use crate::{
    ask::Pending,
    error::AgentError,
    execution::{ExecutionId, ExecutionStatus},
    task::TaskRecord,
};

/// What one execution produced: the execution id, the status, the result, and what kind of
/// answer it is.
///
/// A tool call's output is JSON (`Outcome<Value>`); a resource read's is its contents
/// (`Outcome<Contents>`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Outcome<T = Value> {
    /// The execution that produced the result (for a replay, the original execution).
    pub execution_id: ExecutionId,
    /// How the execution ended.
    pub status: ExecutionStatus,
    /// The output, or the error.
    pub result: Result<T, AgentError>,
    /// How an adapter delivers it.
    pub kind: OutcomeKind,
}

/// What kind of answer an [`Outcome`] is, for adapters whose protocol delivers them
/// differently.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum OutcomeKind {
    /// The call reached its tool, or the read its resource: `result` is the output, the error,
    /// or the runtime's refusal to run it. Delivered as a result.
    Result,
    /// The call named no tool (`TOOL_NOT_FOUND`), or the read no resource
    /// (`RESOURCE_NOT_FOUND`), so nothing could take it. A protocol delivers it as an error of
    /// the request itself (MCP: JSON-RPC `-32602`, or `-32002` for a resource up to
    /// 2025-11-25), not as a result.
    Unroutable,
    /// The execution waits for answers that come on the caller's next try: deliver the
    /// questions and the state to send back with them. They are the tool's own (see
    /// [`Asker`](crate::Asker); `result` holds an `INPUT_REQUIRED` error for callers that
    /// cannot answer), or its approver's (see [`Approval::Ask`](crate::Approval::Ask); `result`
    /// holds `CONFIRMATION_REQUIRED`). `status` is `input_required`.
    InputRequired(Pending),
    /// The execution became a task and runs on: deliver the task (its id, its status), whose
    /// owner follows it through [`Runtime::task`](crate::Runtime::task). `status` is `running`
    /// and `result` holds `{"task_id": ...}`.
    Task(Box<TaskRecord>),
}

impl<T> Outcome<T> {
    /// True when the tool's output is in `result`.
    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }

    /// The error, if the call failed.
    pub fn error(&self) -> Option<&AgentError> {
        self.result.as_ref().err()
    }

    /// The task the execution became, if it did.
    pub fn task(&self) -> Option<&TaskRecord> {
        match &self.kind {
            OutcomeKind::Task(task) => Some(task),
            _ => None,
        }
    }

    /// The questions the caller must answer before the execution goes on, if it waits for them.
    pub fn pending(&self) -> Option<&Pending> {
        match &self.kind {
            OutcomeKind::InputRequired(pending) => Some(pending),
            _ => None,
        }
    }

    /// The error's code; panics if the call succeeded. Meant for tests.
    #[track_caller]
    pub fn unwrap_error_code(&self) -> &str {
        match &self.result {
            Ok(_) => panic!("execution {} succeeded", self.execution_id),
            Err(err) => err.code(),
        }
    }
}

impl Outcome<Value> {
    /// Decodes the output into `T`; panics with the error otherwise. Meant for tests.
    #[track_caller]
    pub fn unwrap_output<O: serde::de::DeserializeOwned>(&self) -> O {
        match &self.result {
            Ok(value) => serde_json::from_value(value.clone())
                .unwrap_or_else(|err| panic!("output does not decode: {err}: {value}")),
            Err(err) => panic!("execution {} failed: {err}", self.execution_id),
        }
    }
}
