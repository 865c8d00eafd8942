//! Running a tool's (or a resource's) code under the runtime's guard: its deadline, the
//! request's cancellation, panics caught. Whatever happens, the code's future is dropped by
//! the time this returns.

use std::{panic::AssertUnwindSafe, time::Duration};

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::{error::AgentError, execution::ExecutionStatus};

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
