//! How a scenario opens a fresh store: [`TaskSetup`], [`TaskOpener`], and [`check`], which runs
//! one scenario in a scratch directory of its own, on a runtime of its own.

use std::{future::Future, path::PathBuf, sync::Arc};

use carmy_core::TaskStore;

use crate::scenario::{self, Stores};

/// What a scenario asks of the store it opens.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskSetup {
    /// The most tasks one principal may hold (the store's `tasks.max_per_principal`).
    pub max_tasks_per_principal: usize,
    /// An empty directory of the scenario's own, removed when it ends: where a store kept in
    /// files puts them.
    pub dir: PathBuf,
}

/// How a scenario opens a fresh store: the closure given to
/// [`task_conformance_tests!`](crate::task_conformance_tests), run on a blocking thread.
pub struct TaskOpener<S> {
    stores: Stores<TaskSetup, S>,
}

impl<S> Clone for TaskOpener<S> {
    fn clone(&self) -> Self {
        Self {
            stores: self.stores.clone(),
        }
    }
}

impl<S> std::fmt::Debug for TaskOpener<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskOpener")
            .field("dir", &self.stores.dir)
            .finish()
    }
}

impl<S: TaskStore> TaskOpener<S> {
    /// A fresh store with the default bounds.
    pub async fn open(&self) -> Arc<S> {
        self.open_with(1_000).await
    }

    /// A fresh store holding at most `max_tasks_per_principal` tasks per principal.
    pub async fn open_with(&self, max_tasks_per_principal: usize) -> Arc<S> {
        self.stores
            .open(|dir| TaskSetup {
                max_tasks_per_principal,
                dir,
            })
            .await
    }
}

/// Runs one scenario against stores opened by `open`, on a runtime of its own.
pub fn check<S, F, Fut>(name: &str, open: F, scenario: impl FnOnce(TaskOpener<S>) -> Fut)
where
    S: TaskStore,
    F: Fn(TaskSetup) -> S + Send + Sync + 'static,
    Fut: Future<Output = ()>,
{
    scenario::run("carmy-task-conformance", name, |dir| {
        scenario(TaskOpener {
            stores: Stores::new(open, dir),
        })
    });
}
