//! Where a tool that asked its caller stops: its ask hands over the questions and never
//! resumes; the run step, racing the tool against this, ends the execution waiting for input.

use std::future::Future;

use crate::{context::Asking, error::AgentError, execution::ExecutionStatus};

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
