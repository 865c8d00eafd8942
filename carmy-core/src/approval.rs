//! Approval: may this call run? A step of the pipeline, asked only for tools that need
//! confirmation.
//!
//! The host's grants are asked first ([`HostGrants`]): `confirm:<tool>` among the caller's grants
//! lets the call run and nobody else is asked. Otherwise the call's own [`Approver`], if the
//! host gave it one ([`Request::approver`](crate::Request::approver)), decides: it may grant, decline,
//! or put questions to the human ([`Pending`]) and have the caller come back with the answers. Without one,
//! the call is refused with `CONFIRMATION_REQUIRED`. Whatever the answer, the arguments it
//! sees are the validated ones, and a refusal is recorded like any other.

use std::{fmt, future::Future, pin::Pin, sync::Arc};

use serde_json::Value;

use crate::{
    ask::Pending, caller::Caller, catalog::ToolEntry, error::AgentError, execution::ExecutionId,
};

/// Decides whether a call that needs confirmation may run.
///
/// ```
/// use carmy_core::{AgentError, Approval, ApprovalRequest, Approver};
///
/// /// Approves cancellations of one order only.
/// struct OnlyOrder(&'static str);
///
/// impl Approver for OnlyOrder {
///     async fn approve(&self, request: ApprovalRequest<'_>) -> Approval {
///         if request.arguments()["order_id"] == self.0 {
///             Approval::Granted
///         } else {
///             Approval::Declined(AgentError::confirmation_declined(request.tool().name()))
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an approver",
    label = "not an approver",
    note = "implement `async fn approve(&self, request: ApprovalRequest<'_>) -> Approval` for `{Self}`"
)]
pub trait Approver: Send + Sync + 'static {
    /// Whether the call `request` describes may run. Asked only when the tool needs
    /// confirmation and the host granted none; the runtime stops waiting if the call is
    /// cancelled.
    fn approve(&self, request: ApprovalRequest<'_>) -> impl Future<Output = Approval> + Send;
}

/// The answer of an [`Approver`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Approval {
    /// The call runs, once.
    Granted,
    /// The call does not run; the caller gets this error (`CONFIRMATION_DECLINED`,
    /// `CONFIRMATION_INVALID`...).
    Declined(AgentError),
    /// Nobody can answer yet: the caller puts the questions to the human (a confirmation form,
    /// say) and calls again with the answers, carrying [`Pending::state`] back. The call does
    /// not run this time; the approver finds the answers on the caller's next try.
    Ask(Pending),
}

/// The call an [`Approver`] is asked about.
#[derive(Clone, Copy, Debug)]
pub struct ApprovalRequest<'a> {
    pub(crate) tool: &'a ToolEntry,
    pub(crate) arguments: &'a Value,
    pub(crate) caller: &'a Caller,
    pub(crate) execution_id: &'a ExecutionId,
}

impl<'a> ApprovalRequest<'a> {
    /// The tool, with its effect and policy.
    pub fn tool(&self) -> &'a ToolEntry {
        self.tool
    }

    /// The arguments, validated against the tool's input schema.
    pub fn arguments(&self) -> &'a Value {
        self.arguments
    }

    /// The host's trusted facts about the caller.
    pub fn caller(&self) -> &'a Caller {
        self.caller
    }

    /// The execution that asks.
    pub fn execution_id(&self) -> &'a ExecutionId {
        self.execution_id
    }
}

/// The host's grants, asked first: `confirm:<tool>` among the caller's grants approves; anything
/// else is `CONFIRMATION_REQUIRED`, naming the grant that is missing.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostGrants;

impl HostGrants {
    /// The answer, without awaiting anything.
    pub fn decide(request: &ApprovalRequest<'_>) -> Approval {
        let tool = request.tool.name();
        if request.caller.can_confirm(tool) {
            Approval::Granted
        } else {
            Approval::Declined(AgentError::confirmation_required(tool))
        }
    }
}

impl Approver for HostGrants {
    async fn approve(&self, request: ApprovalRequest<'_>) -> Approval {
        Self::decide(&request)
    }
}

/// An [`Approver`] behind a pointer: `approve` returns a boxed future.
pub(crate) trait DynApprover: Send + Sync + 'static {
    fn approve_boxed<'a>(
        &'a self,
        request: ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>>;
}

impl<A: Approver> DynApprover for A {
    fn approve_boxed<'a>(
        &'a self,
        request: ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        Box::pin(self.approve(request))
    }
}

/// The approver a request carries.
#[derive(Clone)]
pub(crate) struct CallApprover(pub(crate) Arc<dyn DynApprover>);

impl fmt::Debug for CallApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Approver")
    }
}
