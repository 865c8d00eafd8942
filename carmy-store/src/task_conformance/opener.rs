//! How a scenario opens a fresh store: [`TaskSetup`], [`TaskOpener`], and [`check`], which runs
//! one scenario in a scratch directory of its own, on a runtime of its own.

use std::{
    future::Future,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use carmy_core::TaskStore;

/// What a scenario asks of the store it opens.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskSetup {
    /// The most tasks one principal may hold (the store's `max_tasks_per_principal`).
    pub max_tasks_per_principal: usize,
    /// An empty directory of the scenario's own, removed when it ends: where a store kept in
    /// files puts them.
    pub dir: PathBuf,
}

/// How a scenario opens a fresh store: the closure given to
/// [`task_conformance_tests!`](crate::task_conformance_tests), run on a blocking thread.
pub struct TaskOpener<S> {
    open: Arc<dyn Fn(TaskSetup) -> S + Send + Sync>,
    dir: PathBuf,
}

impl<S> Clone for TaskOpener<S> {
    fn clone(&self) -> Self {
        Self {
            open: Arc::clone(&self.open),
            dir: self.dir.clone(),
        }
    }
}

impl<S> std::fmt::Debug for TaskOpener<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskOpener")
            .field("dir", &self.dir)
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
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = self
            .dir
            .join(format!("store-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).expect("a scratch directory for the store");
        let setup = TaskSetup {
            max_tasks_per_principal,
            dir,
        };
        let open = Arc::clone(&self.open);
        let store = tokio::task::spawn_blocking(move || open(setup))
            .await
            .expect("opening the store panicked");
        Arc::new(store)
    }
}

/// Removes a scenario's scratch directory, even when it fails.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one scenario against stores opened by `open`, on a runtime of its own.
pub fn check<S, F, Fut>(name: &str, open: F, scenario: impl FnOnce(TaskOpener<S>) -> Fut)
where
    S: TaskStore,
    F: Fn(TaskSetup) -> S + Send + Sync + 'static,
    Fut: Future<Output = ()>,
{
    let dir = std::env::temp_dir().join(format!(
        "carmy-task-conformance-{}-{name}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let _scratch = Scratch(dir.clone());
    let opener = TaskOpener {
        open: Arc::new(open),
        dir,
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(scenario(opener));
}
