//! Tasks: an execution that outlives the call that started it. The caller is answered with the
//! task's id at once (or once the tool has run for its `task_after`); it then reads the task's
//! status, progress and outcome, answers the questions the tool asks, and may cancel it, from
//! any replica, until the task expires.
//!
//! Nothing about a task lives only in the process running it: the record (who owns it, which
//! tool, where it stands, its progress, the questions waiting for answers and the answers
//! delivered, whether a cancel was asked, the outcome) is in a [`TaskStore`], shared by every
//! replica. The replica running the task holds a [`TaskLease`] on it and renews it while the tool
//! runs; each renewal also reads what others wrote for it (a cancel request, answers), so
//! `tasks/cancel` or an answer delivered to any replica reaches the running tool. If the replica
//! dies, its lease runs out and the next reader finds the task `failed` ([`TaskEnding::lost`]).
//! A task that ended is kept for its `ttl`, then forgotten.
//!
//! The runtime drives the store: [`Runtime`](crate::Runtime) creates the task when the
//! execution detaches from its call, renews the lease, records the questions and the outcome;
//! [`Runtime::task`](crate::Runtime::task), [`Runtime::cancel_task`](crate::Runtime::cancel_task)
//! and [`Runtime::answer_task`](crate::Runtime::answer_task) are what adapters call on behalf of
//! a client. Tasks are scoped to their owner: another principal asking for a task id is told it
//! does not exist.

mod memory;
mod record;
mod support;

use std::{collections::BTreeMap, future::Future, pin::Pin, sync::Arc, time::Duration};

use serde_json::Value;

use crate::{ask::Asks, idempotency::StoreError};

pub use memory::{MemoryTaskStore, MemoryTaskStoreLimits};
pub use record::{
    Created, NewTask, Responded, TaskEnding, TaskId, TaskKey, TaskLease, TaskProgress, TaskRecord,
    TaskReport, TaskSignals, TaskStatus,
};
pub use support::TaskSupport;

/// Where tasks live. The default, [`MemoryTaskStore`], is per process; implement this over a
/// database shared by replicas, and every replica can read, answer and cancel any task.
///
/// What an implementation promises:
/// - records are scoped to their owner: every reading call names a [`TaskKey`] (owner and id),
///   and a key whose owner is not the task's finds nothing;
/// - `create` fails closed ([`StoreError::Full`]) rather than forget a task early to make room;
/// - holders' calls (`renew`, `ask`, `finish`) apply only while the lease is the task's
///   holder, and fail with [`StoreError::LeaseLost`] otherwise;
/// - a task whose lease ran out unfinished is settled as [`TaskEnding::lost`] the next time
///   anyone looks at it (or by [`sweep`](Self::sweep));
/// - a task that ended is kept for its `ttl` from its end, then forgotten;
/// - `cancel` on a task that ended changes nothing; `respond` ignores (and names) the answers
///   to questions that are not waiting: unknown keys, keys answered already, a task that
///   ended;
/// - when it cannot answer, it says so ([`StoreError`]) rather than guess.
///
/// A store is shared with `Arc`; `Arc<S>` is a store too. `carmy-store`'s `task_conformance`
/// suite is this contract as scenarios, which a store passes with one line.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a task store",
    label = "not a task store",
    note = "implement `TaskStore` for `{Self}` (create, get, cancel, respond, renew, ask, finish, changed, sweep), or use `MemoryTaskStore`"
)]
pub trait TaskStore: Send + Sync + 'static {
    /// Creates `task`, held by the caller under a lease of `lease` from now.
    fn create(
        &self,
        task: NewTask,
        lease: Duration,
    ) -> impl Future<Output = Result<Created, StoreError>> + Send;

    /// The task `key` names, as its owner sees it; `None` for an unknown or expired task, or
    /// another owner's.
    fn get(
        &self,
        key: &TaskKey,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send;

    /// Records that the owner wants the task cancelled; the holder sees it at its next renewal.
    /// A task that ended is left as it is. The task afterwards; `None` as for [`get`](Self::get).
    fn cancel(
        &self,
        key: &TaskKey,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send;

    /// Delivers `answers` to the questions the task waits on: each key that names a question
    /// still unanswered is taken, every other is ignored, and both are named in the result.
    /// Once every question is answered, the task is working again. `None` as for
    /// [`get`](Self::get).
    fn respond(
        &self,
        key: &TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> impl Future<Output = Result<Option<Responded>, StoreError>> + Send;

    /// Extends the holder's lease to `duration` from now and records `report` (progress, a
    /// status message), if any; says what the holder must act on: a cancel request, the
    /// answers delivered to its questions.
    fn renew(
        &self,
        lease: &TaskLease,
        duration: Duration,
        report: Option<TaskReport>,
    ) -> impl Future<Output = Result<TaskSignals, StoreError>> + Send;

    /// Sets the questions the task waits on to `questions`, each under a key never used in
    /// the task before, or kept from the last call: answers already delivered to a question
    /// kept are kept. The task waits for input while one is unanswered; no questions, and it
    /// is working again.
    fn ask(
        &self,
        lease: &TaskLease,
        questions: Asks,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Records how the task ended, and gives up the lease.
    fn finish(
        &self,
        lease: &TaskLease,
        ending: TaskEnding,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Resolves when something the holder must act on may have been written (a cancel request,
    /// answers), then it renews to read it. It is armed when called, not when first polled: a
    /// change made after the call resolves it. A store that cannot be told may simply wait a
    /// short while (its poll interval); one whose task is gone resolves at once.
    fn changed(&self, lease: &TaskLease) -> impl Future<Output = ()> + Send;

    /// Settles the tasks whose lease ran out and forgets those past their `ttl`; how many were
    /// forgotten. The runtime calls it now and then; a store may also do it on its own.
    fn sweep(&self) -> impl Future<Output = Result<usize, StoreError>> + Send;
}

impl<S: TaskStore> TaskStore for Arc<S> {
    fn create(
        &self,
        task: NewTask,
        lease: Duration,
    ) -> impl Future<Output = Result<Created, StoreError>> + Send {
        (**self).create(task, lease)
    }

    fn get(
        &self,
        key: &TaskKey,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send {
        (**self).get(key)
    }

    fn cancel(
        &self,
        key: &TaskKey,
    ) -> impl Future<Output = Result<Option<TaskRecord>, StoreError>> + Send {
        (**self).cancel(key)
    }

    fn respond(
        &self,
        key: &TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> impl Future<Output = Result<Option<Responded>, StoreError>> + Send {
        (**self).respond(key, answers)
    }

    fn renew(
        &self,
        lease: &TaskLease,
        duration: Duration,
        report: Option<TaskReport>,
    ) -> impl Future<Output = Result<TaskSignals, StoreError>> + Send {
        (**self).renew(lease, duration, report)
    }

    fn ask(
        &self,
        lease: &TaskLease,
        questions: Asks,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).ask(lease, questions)
    }

    fn finish(
        &self,
        lease: &TaskLease,
        ending: TaskEnding,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).finish(lease, ending)
    }

    fn changed(&self, lease: &TaskLease) -> impl Future<Output = ()> + Send {
        (**self).changed(lease)
    }

    fn sweep(&self) -> impl Future<Output = Result<usize, StoreError>> + Send {
        (**self).sweep()
    }
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A [`TaskStore`] behind a pointer: each call returns a boxed future.
pub(crate) trait DynTaskStore: Send + Sync + 'static {
    fn create_boxed(
        &self,
        task: NewTask,
        lease: Duration,
    ) -> BoxFuture<'_, Result<Created, StoreError>>;

    fn get_boxed<'a>(
        &'a self,
        key: &'a TaskKey,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    fn cancel_boxed<'a>(
        &'a self,
        key: &'a TaskKey,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    fn respond_boxed<'a>(
        &'a self,
        key: &'a TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<Option<Responded>, StoreError>>;

    fn renew_boxed<'a>(
        &'a self,
        lease: &'a TaskLease,
        duration: Duration,
        report: Option<TaskReport>,
    ) -> BoxFuture<'a, Result<TaskSignals, StoreError>>;

    fn ask_boxed<'a>(
        &'a self,
        lease: &'a TaskLease,
        questions: Asks,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    fn finish_boxed<'a>(
        &'a self,
        lease: &'a TaskLease,
        ending: TaskEnding,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    fn changed_boxed<'a>(&'a self, lease: &'a TaskLease) -> BoxFuture<'a, ()>;

    fn sweep_boxed(&self) -> BoxFuture<'_, Result<usize, StoreError>>;
}

impl<S: TaskStore> DynTaskStore for S {
    fn create_boxed(
        &self,
        task: NewTask,
        lease: Duration,
    ) -> BoxFuture<'_, Result<Created, StoreError>> {
        Box::pin(self.create(task, lease))
    }

    fn get_boxed<'a>(
        &'a self,
        key: &'a TaskKey,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(self.get(key))
    }

    fn cancel_boxed<'a>(
        &'a self,
        key: &'a TaskKey,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(self.cancel(key))
    }

    fn respond_boxed<'a>(
        &'a self,
        key: &'a TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<Option<Responded>, StoreError>> {
        Box::pin(self.respond(key, answers))
    }

    fn renew_boxed<'a>(
        &'a self,
        lease: &'a TaskLease,
        duration: Duration,
        report: Option<TaskReport>,
    ) -> BoxFuture<'a, Result<TaskSignals, StoreError>> {
        Box::pin(self.renew(lease, duration, report))
    }

    fn ask_boxed<'a>(
        &'a self,
        lease: &'a TaskLease,
        questions: Asks,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.ask(lease, questions))
    }

    fn finish_boxed<'a>(
        &'a self,
        lease: &'a TaskLease,
        ending: TaskEnding,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.finish(lease, ending))
    }

    fn changed_boxed<'a>(&'a self, lease: &'a TaskLease) -> BoxFuture<'a, ()> {
        // Called here, so the wait is armed now (see `TaskStore::changed`).
        Box::pin(self.changed(lease))
    }

    fn sweep_boxed(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(self.sweep())
    }
}
