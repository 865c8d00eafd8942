//! Where a tool that asked its caller stops: its ask hands over the questions and never
//! resumes; the run step, racing the tool against this, ends the execution waiting for input.

use std::{future::Future, sync::Mutex};

use tokio::sync::Notify;

use crate::{ask::Pending, context::Asking, error::AgentError, execution::ExecutionStatus};

/// Runs `run` (a tool or a prompt under its guard) until it ends or, when it may ask,
/// until it asks for answers that come on the caller's next try.
pub(crate) async fn until_asked<T>(
    run: impl Future<Output = (ExecutionStatus, Result<T, AgentError>)>,
    asking: Option<&Asking>,
    target: &str,
) -> (ExecutionStatus, Result<T, AgentError>) {
    match asking {
        None => run.await,
        Some(asking) => tokio::select! {
            ran = run => ran,
            () = asking.suspension.stopped() => (
                ExecutionStatus::InputRequired,
                Err(AgentError::input_required(target)),
            ),
        },
    }
}

/// The questions an execution stopped at, once it stopped.
#[derive(Default)]
pub(crate) struct Suspension {
    pending: Mutex<Option<Pending>>,
    stopped: Notify,
}

impl Suspension {
    /// The tool asked `pending`: stop it.
    pub(crate) fn suspend(&self, pending: Pending) {
        *self.pending.lock().unwrap_or_else(|e| e.into_inner()) = Some(pending);
        // A permit is kept if the run step is not waiting yet: the stop is never missed.
        self.stopped.notify_one();
    }

    /// Resolves once the tool asked.
    pub(crate) async fn stopped(&self) {
        self.stopped.notified().await;
    }

    /// The questions, once asked.
    pub(crate) fn take(&self) -> Option<Pending> {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}
