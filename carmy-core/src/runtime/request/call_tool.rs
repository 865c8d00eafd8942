//! `tools/call`: a tool name, JSON arguments, and what the host gives the call.

use std::sync::Arc;

use serde_json::Value;

use super::{Operation, Request, sealed::Sealed};
use crate::{
    approval::{Approver, CallApprover},
    ask::{Asker, CallAsker},
    progress::ProgressReporter,
};

/// A tool call: the tool, its arguments, and what the host gives it (a request id, where
/// progress goes, who approves, who answers its questions, whether it may become a task).
/// Built by [`Request::new`].
#[derive(Debug)]
pub struct CallTool {
    pub(in crate::runtime) tool: String,
    pub(in crate::runtime) arguments: Value,
    pub(in crate::runtime) request_id: Option<String>,
    pub(in crate::runtime) progress: ProgressReporter,
    pub(in crate::runtime) approver: Option<CallApprover>,
    pub(in crate::runtime) asker: Option<CallAsker>,
    pub(in crate::runtime) allow_task: bool,
}

impl Sealed for CallTool {}

impl Operation for CallTool {
    const METHOD: &'static str = "tools/call";

    fn target(&self) -> &str {
        &self.tool
    }
}

impl Request<CallTool> {
    /// A call of `tool` with `arguments` (`null` counts as `{}`), anonymous and ungranted.
    ///
    /// ```
    /// use carmy_core::{Context, Request};
    ///
    /// let request = Request::new("place_order", serde_json::json!({ "sku": "MOUSE-1" }))
    ///     .request_id("order-7f3a")
    ///     .context(Context::new().with_principal("alice"));
    /// assert_eq!(request.tool(), "place_order");
    /// ```
    pub fn new(tool: impl Into<String>, arguments: Value) -> Self {
        Self::of(CallTool {
            tool: tool.into(),
            arguments,
            request_id: None,
            progress: ProgressReporter::disabled(),
            approver: None,
            asker: None,
            allow_task: false,
        })
    }

    /// Makes a write run at most once: retries with the same id (from the same principal) get
    /// the first execution's outcome. A read-only or idempotent tool runs again on every retry,
    /// and its calls keep no id. The id should come from the host, not from the model.
    pub fn request_id(mut self, request_id: impl Into<String>) -> Self {
        self.operation.request_id = Some(request_id.into());
        self
    }

    /// Where the tool's progress reports go.
    pub fn progress(mut self, progress: ProgressReporter) -> Self {
        self.operation.progress = progress;
        self
    }

    /// Who decides, when the tool needs confirmation and the host's context grants none
    /// (for example, the human in front of the client, asked through the protocol). Without
    /// one, such a call is refused with `CONFIRMATION_REQUIRED`. See [`Approver`].
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.operation.approver = Some(CallApprover(Arc::new(approver)));
        self
    }

    /// Who answers the tool's questions ([`Context::ask`](crate::Context::ask)): the caller's
    /// host, through the protocol. Without one, a tool that asks fails with `CANNOT_ASK`. See
    /// [`Asker`].
    pub fn asker(mut self, asker: impl Asker) -> Self {
        self.operation.asker = Some(CallAsker(Arc::new(asker)));
        self
    }

    /// Says the caller can follow a task: a call of a tool whose calls may become tasks
    /// ([`TaskSupport`](crate::TaskSupport)) becomes one when its tool starts (or once it has
    /// run for its `task_after`), and is answered then with
    /// [`OutcomeKind::Task`](crate::OutcomeKind::Task); the tool runs on, and its outcome goes
    /// to the runtime's [`TaskStore`](crate::TaskStore). The request's cancellation stops the
    /// call only until then; afterwards, cancelling is
    /// [`Runtime::cancel_task`](crate::Runtime::cancel_task).
    pub fn allow_task(mut self) -> Self {
        self.operation.allow_task = true;
        self
    }

    /// The tool name.
    pub fn tool(&self) -> &str {
        &self.operation.tool
    }
}
