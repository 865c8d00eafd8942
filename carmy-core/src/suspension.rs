//! `Suspension`: where a tool that asked its caller stops. Its ask hands over the questions and
//! never resumes; the runtime, racing the tool against this, ends the execution waiting for input.

use std::{future::Future, pin::Pin, sync::Mutex};

use tokio::sync::Notify;

use crate::{
    ask::{Answers, Asks, Pending},
    error::AgentError,
    sync::lock,
};

/// A task's answers, on their way.
pub(crate) type TaskAnswers<'a> =
    Pin<Box<dyn Future<Output = Result<Answers, AgentError>> + Send + 'a>>;

/// Where a detached execution's questions go: its task's driver, once it has one. The runtime
/// implements it; the context only asks through it.
pub(crate) trait AskRoute: Send + Sync + 'static {
    /// Puts `asks` to the task's owner once the execution became a task; before, hands them back.
    fn ask_task(&self, asks: Asks) -> Result<TaskAnswers<'_>, Asks>;
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
        *lock(&self.pending) = Some(pending);
        // A permit is kept if the run step is not waiting yet: the stop is never missed.
        self.stopped.notify_one();
    }

    /// Resolves once the tool asked.
    pub(crate) async fn stopped(&self) {
        self.stopped.notified().await;
    }

    /// The questions, once asked.
    pub(crate) fn take(&self) -> Option<Pending> {
        lock(&self.pending).take()
    }
}
