//! What a call that may become a task carries while it runs: where its first answer goes, and
//! the route its questions and progress take once it detached.

use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::oneshot;

use super::Driver;
use crate::{
    ask::Asks,
    idempotency::Recorded,
    outcome::Outcome,
    progress::{ProgressReporter, ProgressSink},
    suspension::{AskRoute, TaskAnswers},
    sync::lock,
    task::TaskEnding,
};

/// What a call that may become a task carries: where its first answer goes, and its task's
/// driver once it detached.
pub(crate) struct TaskSlot {
    /// The caller's answer: taken by the first to give it (the detach, or the end).
    answer: Mutex<Option<oneshot::Sender<Outcome>>>,
    pub(crate) route: Arc<TaskRoute>,
}

/// Where a detached execution's questions and progress go: its task's driver, once it has one.
#[derive(Default)]
pub(crate) struct TaskRoute(OnceLock<Driver>);

impl TaskRoute {
    /// The driver, once the execution detached.
    pub(crate) fn driver(&self) -> Option<&Driver> {
        self.0.get()
    }

    /// Routes to `driver` from now on; set once, as an execution detaches at most once.
    pub(super) fn set(&self, driver: Driver) {
        let _ = self.0.set(driver);
    }
}

impl AskRoute for TaskRoute {
    fn ask_task(&self, asks: Asks) -> Result<TaskAnswers<'_>, Asks> {
        match self.driver() {
            Some(driver) => Ok(Box::pin(driver.ask(asks))),
            None => Err(asks),
        }
    }
}

impl TaskSlot {
    pub(super) fn new(answer: oneshot::Sender<Outcome>) -> Self {
        Self {
            answer: Mutex::new(Some(answer)),
            route: Arc::default(),
        }
    }

    /// Whether the execution detached.
    pub(in crate::runtime) fn detached(&self) -> bool {
        self.route.driver().is_some()
    }

    /// Gives the caller `outcome`, unless it already has its answer.
    pub(super) fn answer(&self, outcome: Outcome) {
        let sender = lock(&self.answer).take();
        if let Some(sender) = sender {
            let _ = sender.send(outcome);
        }
    }

    /// The reporter of the tool's progress: the caller's while the call is attached, the
    /// task's once it detached.
    pub(in crate::runtime) fn progress(&self, attached: &ProgressReporter) -> ProgressReporter {
        ProgressReporter::new(Arc::new(TaskProgressSink {
            attached: attached.clone(),
            route: Arc::clone(&self.route),
        }))
    }

    /// Records how a detached execution ended in its task.
    pub(in crate::runtime) async fn finish(&self, outcome: &Outcome) {
        if let Some(driver) = self.route.driver() {
            let recorded = Recorded::new(
                outcome.execution_id.clone(),
                outcome.status,
                outcome.result.clone(),
            );
            driver.finish(TaskEnding::new(recorded)).await;
        }
    }
}

struct TaskProgressSink {
    attached: ProgressReporter,
    route: Arc<TaskRoute>,
}

impl ProgressSink for TaskProgressSink {
    fn report(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        match self.route.driver() {
            Some(driver) => driver.report(done, total, message),
            None => self.attached.report(done, total, message),
        }
    }
}
