//! `Incoming`: a request as middleware sees it.

use serde_json::Value;

use super::Answer;
use crate::{
    context::Context,
    error::AgentError,
    execution::{ExecutionId, ExecutionStatus},
    outcome::{Outcome, OutcomeKind},
    runtime::request::{CallTool, Complete, GetPrompt, ReadResource, Request},
};

/// One request the runtime serves, as [middleware](super::Middleware) sees it: one of its four
/// operations, with what they share.
#[derive(Debug)]
#[non_exhaustive]
pub enum Incoming {
    /// `tools/call`.
    CallTool(Request<CallTool>),
    /// `resources/read`.
    ReadResource(Request<ReadResource>),
    /// `prompts/get`.
    GetPrompt(Request<GetPrompt>),
    /// `completion/complete`.
    Complete(Request<Complete>),
}

/// `$body` with `$request` bound to the request, whichever operation it is.
macro_rules! each {
    ($incoming:expr, $request:pat => $body:expr) => {
        match $incoming {
            Incoming::CallTool($request) => $body,
            Incoming::ReadResource($request) => $body,
            Incoming::GetPrompt($request) => $body,
            Incoming::Complete($request) => $body,
        }
    };
}

impl Incoming {
    /// The protocol's name of the method: `tools/call`, `resources/read`, `prompts/get`,
    /// `completion/complete`.
    pub fn method(&self) -> &'static str {
        each!(self, request => request.method())
    }

    /// What the request names: the tool, the URI, the prompt, the prompt or template completed.
    pub fn target(&self) -> &str {
        each!(self, request => request.target())
    }

    /// The trusted context the request runs in: the caller, its grants, the host's extensions.
    pub fn trusted(&self) -> &Context {
        each!(self, request => request.trusted())
    }

    /// A tool call's arguments, as sent; `None` for the other operations.
    pub fn arguments(&self) -> Option<&Value> {
        match self {
            Incoming::CallTool(request) => Some(&request.operation.arguments),
            _ => None,
        }
    }

    /// The same request in the context `change` makes of its own: a middleware adds what it
    /// learned of the caller (`context.with_extension(Tenant(..))`), which the tool reads with
    /// [`Context::extension`].
    #[must_use]
    pub fn with_context(self, change: impl FnOnce(Context) -> Context) -> Self {
        each!(self, mut request => {
            request.context = change(std::mem::take(&mut request.context));
            request.into()
        })
    }

    /// The answer that refuses this request with `error`, without running anything: status
    /// `rejected`, a fresh execution id, delivered as a result (a tool error, a read's error).
    pub fn refuse(&self, error: AgentError) -> Answer {
        fn refused<T>(error: AgentError) -> Outcome<T> {
            Outcome {
                execution_id: ExecutionId::generate(),
                status: ExecutionStatus::Rejected,
                result: Err(error),
                kind: OutcomeKind::Result,
            }
        }
        match self {
            Incoming::CallTool(_) => Answer::CallTool(refused(error)),
            Incoming::ReadResource(_) => Answer::ReadResource(refused(error)),
            Incoming::GetPrompt(_) => Answer::GetPrompt(refused(error)),
            Incoming::Complete(_) => Answer::Complete(refused(error)),
        }
    }
}

impl From<Request<CallTool>> for Incoming {
    fn from(request: Request<CallTool>) -> Self {
        Incoming::CallTool(request)
    }
}

impl From<Request<ReadResource>> for Incoming {
    fn from(request: Request<ReadResource>) -> Self {
        Incoming::ReadResource(request)
    }
}

impl From<Request<GetPrompt>> for Incoming {
    fn from(request: Request<GetPrompt>) -> Self {
        Incoming::GetPrompt(request)
    }
}

impl From<Request<Complete>> for Incoming {
    fn from(request: Request<Complete>) -> Self {
        Incoming::Complete(request)
    }
}
