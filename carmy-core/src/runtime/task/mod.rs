//! Executions that become tasks, and the reading side of tasks.
//!
//! A call whose caller can follow a task ([`Request::allow_task`]) of a tool that may run as one
//! goes through the same pipeline as any call, in a tokio task of its own, while the caller
//! waits for the first of two answers: the call's outcome, when it ends as a plain call would
//! (refused, replayed, asking its caller, or done within the tool's `task_after`); or the task,
//! when the execution *detaches*: when the tool starts (or once it has run for its
//! `task_after`), the task is created in the store (durably, before the caller hears of it), a
//! [`Driver`] starts holding its lease, and the caller is answered with it. The execution runs
//! on: its progress and its questions go to the task, its outcome to the task as well as to the
//! history and the idempotency store, and only the task's cancellation (or its lease lost)
//! stops it, besides its deadline.
//!
//! Before it detaches, a call is a plain call: the caller's cancellation stops it, and a
//! question the tool asks is answered however the caller's host answers questions (on
//! 2026-07-28, on the caller's next try). So a tool that gathers input first and works long
//! after says `task_after`: within it, its question ends the call asking; retried with the
//! answer, it runs past its `task_after` and becomes a task.

mod driver;
pub(super) mod slot;

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{Inner, Request, Runtime, pipeline::Call};
use crate::{
    catalog::ToolEntry,
    error::{AgentError, codes},
    execution::{ExecutionId, ExecutionStatus},
    idempotency::StoreError,
    outcome::{Outcome, OutcomeKind},
    sync::lock,
    task::{NewTask, Responded, TaskId, TaskKey, TaskRecord},
};

pub(crate) use driver::Driver;
use slot::TaskSlot;

/// How often, at most, the runtime asks its task store to sweep.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Cancels the execution if the caller goes away before it detached.
struct StopOnDrop(Option<CancellationToken>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel();
        }
    }
}

impl Runtime {
    /// Whether a call of `tool` by a caller that can follow tasks may become one.
    pub(super) fn may_detach(&self, request: &Request) -> bool {
        request.operation.allow_task
            && self
                .inner
                .catalog
                .get(&request.operation.tool)
                .is_some_and(|entry| entry.task_support().allows_tasks())
    }

    /// Runs `request` in a tokio task of its own, and returns its outcome or, if it detached
    /// first, its task.
    pub(super) async fn execute_detachable(&self, mut request: Request) -> Outcome {
        let execution_id = ExecutionId::generate();
        // The caller's cancellation stops the call while it is one; once it is a task, only
        // the task's cancellation does, so the execution has a token of its own.
        let caller = std::mem::replace(&mut request.cancellation, CancellationToken::new());
        let execution = request.cancellation.clone();
        let (sender, mut answer) = oneshot::channel();
        let slot = Arc::new(TaskSlot::new(sender));
        let (call, arguments) = Call::new(execution_id.clone(), request, Some(Arc::clone(&slot)));
        let runtime = self.clone();
        tokio::spawn(async move {
            let outcome = runtime.execute_call(call, arguments).await;
            slot.answer(outcome);
        });
        let mut stop = StopOnDrop(Some(execution.clone()));
        let answer = tokio::select! {
            answer = &mut answer => answer,
            () = caller.cancelled() => {
                execution.cancel();
                answer.await
            }
        };
        stop.0 = None;
        answer.unwrap_or_else(|_| Outcome {
            execution_id,
            status: ExecutionStatus::Failed,
            result: Err(AgentError::internal(
                "the execution stopped without an outcome",
            )),
            kind: OutcomeKind::Result,
        })
    }

    /// The task `key` names, as its owner sees it: `TASK_NOT_FOUND` for an unknown or expired
    /// task, and for another principal's.
    pub async fn task(&self, key: &TaskKey) -> Result<TaskRecord, AgentError> {
        match self.inner.task_store.get_boxed(key).await {
            Ok(Some(record)) => Ok(record),
            Ok(None) => Err(AgentError::task_not_found(key.id().as_str())),
            Err(error) => Err(error.into_task_error()),
        }
    }

    /// Asks that the task `key` names be cancelled: the replica running it stops the tool at
    /// its next renewal (at once, with a store that tells it), and the task ends `cancelled`.
    /// A task that ended already is left as it is, and this succeeds all the same. The task
    /// afterwards; `TASK_NOT_FOUND` as for [`task`](Self::task).
    pub async fn cancel_task(&self, key: &TaskKey) -> Result<TaskRecord, AgentError> {
        match self.inner.task_store.cancel_boxed(key).await {
            Ok(Some(record)) => Ok(record),
            Ok(None) => Err(AgentError::task_not_found(key.id().as_str())),
            Err(error) => Err(error.into_task_error()),
        }
    }

    /// Delivers `answers` to the questions the task `key` names waits on, whichever replica
    /// runs it: each answer whose key names a question still unanswered is taken, the others
    /// are ignored; the result names both. The tool goes on once all its questions are
    /// answered. `TASK_NOT_FOUND` as for [`task`](Self::task).
    pub async fn answer_task(
        &self,
        key: &TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> Result<Responded, AgentError> {
        match self.inner.task_store.respond_boxed(key, answers).await {
            Ok(Some(responded)) => Ok(responded),
            Ok(None) => Err(AgentError::task_not_found(key.id().as_str())),
            Err(error) => Err(error.into_task_error()),
        }
    }
}

impl Inner {
    /// Makes `call` a task: created in the store, held by a driver, and handed to the caller.
    pub(super) async fn detach(
        &self,
        entry: &ToolEntry,
        call: &Call,
        slot: &TaskSlot,
    ) -> Result<(), AgentError> {
        let key = TaskKey::new(call.context().principal(), TaskId::generate());
        let task = NewTask::new(
            key,
            entry.name(),
            call.begun.id.clone(),
            self.limits.task_ttl,
            self.limits.task_poll_interval,
        );
        let created = self
            .task_store
            .create_boxed(task, self.limits.task_lease)
            .await
            .map_err(StoreError::into_task_error)?;
        self.sweep_now_and_then();
        let driver = Driver::start(
            Arc::clone(&self.task_store),
            created.lease,
            self.limits.task_lease,
            call.cancellation().clone(),
        );
        slot.route.set(driver);
        tracing::debug!(task_id = %created.record.key.id(), "the execution became a task");
        slot.answer(Outcome {
            execution_id: call.begun.id.clone(),
            status: ExecutionStatus::Running,
            result: Ok(json!({ "task_id": created.record.key.id().as_str() })),
            kind: OutcomeKind::Task(Box::new(created.record)),
        });
        Ok(())
    }

    /// Runs `run` (the tool, attached) for the tool's `task_after`, then detaches and runs it
    /// to its end. A run that ends first, or asks its caller something, is answered in the
    /// call. A task that cannot be created leaves the call attached: the tool has started, and
    /// its caller still waits for its outcome.
    pub(super) async fn run_then_detach<T>(
        &self,
        run: impl Future<Output = T>,
        entry: &ToolEntry,
        call: &Call,
        slot: &TaskSlot,
    ) -> T {
        let mut run = std::pin::pin!(run);
        tokio::select! {
            // A run that asked was stopped there, in the same poll: it ends the call.
            biased;
            ran = &mut run => return ran,
            () = tokio::time::sleep(entry.task_after()) => {}
        }
        if let Err(error) = self.detach(entry, call, slot).await {
            tracing::warn!(%error, "cannot make a running call a task; it goes on as a call");
        }
        run.await
    }

    /// Asks the task store to sweep, at most every [`SWEEP_EVERY`], off the caller's path.
    fn sweep_now_and_then(&self) {
        let due = {
            let mut last = lock(&self.last_sweep);
            let due = last.is_none_or(|at| at.elapsed() >= SWEEP_EVERY);
            if due {
                *last = Some(Instant::now());
            }
            due
        };
        if due {
            let store = Arc::clone(&self.task_store);
            tokio::spawn(async move {
                if let Err(error) = store.sweep_boxed().await {
                    tracing::warn!(%error, "the task store could not sweep");
                }
            });
        }
    }
}

impl StoreError {
    /// What a caller is told when the task store fails it. Its own words stay in the log.
    pub(crate) fn into_task_error(self) -> AgentError {
        match self {
            StoreError::Full(reason) => AgentError::capacity(reason),
            error => {
                tracing::warn!(%error, "the task store failed");
                AgentError::unavailable(
                    codes::TASK_STORE_UNAVAILABLE,
                    "the task store could not be reached; retry shortly",
                )
            }
        }
    }
}
