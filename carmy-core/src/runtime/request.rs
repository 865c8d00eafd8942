//! `Request`: one call, as the host hands it to the runtime.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    approval::{Approver, CallApprover},
    ask::{Asker, CallAsker},
    context::Context,
    progress::ProgressReporter,
};

/// One call: a tool name, JSON arguments, and what the host knows about it.
///
/// ```
/// use carmy_core::{Context, Request};
///
/// let request = Request::new("place_order", serde_json::json!({ "sku": "MOUSE-1" }))
///     .request_id("order-7f3a")
///     .context(Context::new().with_principal("alice"));
/// ```
#[derive(Debug)]
#[must_use]
pub struct Request {
    pub(super) tool: String,
    pub(super) arguments: Value,
    pub(super) request_id: Option<String>,
    pub(super) context: Context,
    pub(super) cancellation: CancellationToken,
    pub(super) progress: ProgressReporter,
    pub(super) approver: Option<CallApprover>,
    pub(super) asker: Option<CallAsker>,
    pub(super) allow_task: bool,
}

impl Request {
    /// A call of `tool` with `arguments` (`null` counts as `{}`), anonymous and ungranted.
    pub fn new(tool: impl Into<String>, arguments: Value) -> Self {
        Self {
            tool: tool.into(),
            arguments,
            request_id: None,
            context: Context::new(),
            cancellation: CancellationToken::new(),
            progress: ProgressReporter::disabled(),
            approver: None,
            asker: None,
            allow_task: false,
        }
    }

    /// Makes a write run at most once: retries with the same id (from the same principal) get
    /// the first execution's outcome. A read-only or idempotent tool runs again on every retry,
    /// and its calls keep no id. The id should come from the host, not from the model.
    pub fn request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// The trusted context: principal, grants, extensions.
    pub fn context(mut self, context: Context) -> Self {
        self.context = context;
        self
    }

    /// A token whose cancellation stops the execution.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = token;
        self
    }

    /// Where the tool's progress reports go.
    pub fn progress(mut self, progress: ProgressReporter) -> Self {
        self.progress = progress;
        self
    }

    /// Who decides, when the tool needs confirmation and the host's context grants none
    /// (for example, the human in front of the client, asked through the protocol). Without
    /// one, such a call is refused with `CONFIRMATION_REQUIRED`. See [`Approver`].
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.approver = Some(CallApprover(std::sync::Arc::new(approver)));
        self
    }

    /// Who answers the tool's questions ([`Context::ask`]): the caller's host, through the
    /// protocol. Without one, a tool that asks fails with `CANNOT_ASK`. See [`Asker`].
    pub fn asker(mut self, asker: impl Asker) -> Self {
        self.asker = Some(CallAsker(std::sync::Arc::new(asker)));
        self
    }

    /// Says the caller can follow a task: a call of a tool whose calls may become tasks
    /// ([`TaskSupport`](crate::TaskSupport)) becomes one when its tool starts (or once it has
    /// run for its `task_after`), and is answered then with
    /// [`OutcomeKind::Task`](crate::OutcomeKind::Task); the tool runs on, and its outcome goes
    /// to the runtime's [`TaskStore`](crate::TaskStore). The request's cancellation stops the
    /// call only until then; afterwards, cancelling is [`Runtime::cancel_task`](super::Runtime::cancel_task).
    pub fn allow_task(mut self) -> Self {
        self.allow_task = true;
        self
    }

    /// The tool name.
    pub fn tool(&self) -> &str {
        &self.tool
    }
}
