//! Running a tool's (or a resource's) code under the runtime's guard: its deadline, the
//! request's cancellation, panics caught. Whatever happens, the code's future is dropped by
//! the time this returns.

use std::{panic::AssertUnwindSafe, sync::Arc, time::Duration};

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use super::{Begun, Ending, Inner, suspension::until_asked};
use crate::{
    context::{Asking, Context},
    error::AgentError,
    execution::{ExecutionKind, ExecutionStatus},
    outcome::OutcomeKind,
    progress::ProgressReporter,
    records::Records,
    tool::Invocation,
};

/// What runs, for [`Inner::run_admitted`]: its kind of execution, its name in the record, its
/// deadline, and what the log calls it if it panics.
pub(super) struct Work {
    pub(super) kind: ExecutionKind,
    pub(super) target: &'static str,
    pub(super) timeout: Duration,
    pub(super) what: &'static str,
}

impl Inner {
    /// The records, read-only, for an execution that does not commit any.
    pub(super) fn reader(&self) -> Records {
        self.records
            .as_ref()
            .map_or_else(Records::none, |store| Records::reader(Arc::clone(store)))
    }

    /// The last steps of a read or a render, once its input is checked: admitted under the
    /// runtime's capacity (shared with calls), recorded as running, `code` handed an invocation
    /// of its own (whose token is cancelled when it ends) and run under the guard.
    pub(super) async fn run_admitted<'a, T, F>(
        &'a self,
        work: Work,
        begun: &Begun,
        context: &Context,
        cancellation: &CancellationToken,
        asking: Option<Asking>,
        code: impl FnOnce(Invocation) -> F,
    ) -> Ending<'a, T>
    where
        F: Future<Output = Result<T, AgentError>>,
    {
        let _capacity = match self.capacity.try_admit() {
            Ok(permit) => permit,
            Err(error) => {
                return Ending::stopped(Some(work.target), ExecutionStatus::Rejected, error);
            }
        };
        let running =
            self.history
                .start(begun.id.clone(), work.kind, work.target, begun.started_at);
        let token = cancellation.child_token();
        let invocation = Invocation::new(
            context.for_execution(
                begun.id.clone(),
                token.clone(),
                ProgressReporter::disabled(),
                asking.clone(),
                self.reader(),
                None,
            ),
            Arc::clone(&self.states),
        );
        let (status, result) = until_asked(
            guarded(code(invocation), work.timeout, cancellation, work.what),
            asking.as_ref(),
            work.target,
        )
        .await;
        token.cancel();
        let asked = asking.and_then(|asking| asking.suspension.take());
        Ending {
            target: Some(work.target),
            status,
            result,
            kind: asked.map_or(OutcomeKind::Result, OutcomeKind::InputRequired),
            running: Some(running),
        }
    }
}

/// Runs `work` until it ends, `timeout` passes or `cancellation` fires; `what` names it in the
/// log when it panics.
pub(super) async fn guarded<T>(
    work: impl Future<Output = Result<T, AgentError>>,
    timeout: Duration,
    cancellation: &CancellationToken,
    what: &'static str,
) -> (ExecutionStatus, Result<T, AgentError>) {
    let work = AssertUnwindSafe(work).catch_unwind();
    tokio::select! {
        biased;
        finished = work => match finished {
            Ok(Ok(output)) => (ExecutionStatus::Succeeded, Ok(output)),
            // Code that noticed the cancellation and gave up was cancelled, not failed.
            Ok(Err(_)) if cancellation.is_cancelled() => {
                (ExecutionStatus::Cancelled, Err(AgentError::cancelled()))
            }
            Ok(Err(error)) => (ExecutionStatus::Failed, Err(error)),
            Err(panic) => {
                tracing::error!(panic = panic_message(&panic), "{what} panicked");
                (ExecutionStatus::Panicked, Err(AgentError::tool_panic()))
            }
        },
        () = cancellation.cancelled() => (ExecutionStatus::Cancelled, Err(AgentError::cancelled())),
        () = tokio::time::sleep(timeout) => {
            (ExecutionStatus::TimedOut, Err(AgentError::timeout(timeout)))
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}
