//! How a scenario opens a fresh store: [`Setup`], [`Opener`], and [`check`], which runs one
//! scenario in a scratch directory of its own, on a runtime of its own.

use std::{
    future::Future,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use carmy_core::IdempotencyStore;

/// What a scenario asks of the store it opens.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Setup {
    /// The most keys one principal may hold (the store's `max_entries_per_principal`).
    pub max_entries_per_principal: usize,
    /// An empty directory of the scenario's own, removed when it ends: where a store kept in
    /// files puts them.
    pub dir: PathBuf,
}

/// How a scenario opens a fresh store: the closure given to
/// [`conformance_tests!`](crate::conformance_tests), run on a blocking thread (opening a file or
/// a connection may block).
pub struct Opener<S> {
    open: Arc<dyn Fn(Setup) -> S + Send + Sync>,
    dir: PathBuf,
}

impl<S> Clone for Opener<S> {
    fn clone(&self) -> Self {
        Self {
            open: Arc::clone(&self.open),
            dir: self.dir.clone(),
        }
    }
}

impl<S> std::fmt::Debug for Opener<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opener").field("dir", &self.dir).finish()
    }
}

impl<S: IdempotencyStore> Opener<S> {
    /// A fresh store with the default bounds.
    pub async fn open(&self) -> Arc<S> {
        self.open_with(10_000).await
    }

    /// A fresh store holding at most `max_entries_per_principal` keys per principal.
    pub async fn open_with(&self, max_entries_per_principal: usize) -> Arc<S> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = self
            .dir
            .join(format!("store-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).expect("a scratch directory for the store");
        let setup = Setup {
            max_entries_per_principal,
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
pub fn check<S, F, Fut>(name: &str, open: F, scenario: impl FnOnce(Opener<S>) -> Fut)
where
    S: IdempotencyStore,
    F: Fn(Setup) -> S + Send + Sync + 'static,
    Fut: Future<Output = ()>,
{
    let dir = std::env::temp_dir().join(format!(
        "carmy-conformance-{}-{name}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let _scratch = Scratch(dir.clone());
    let opener = Opener {
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
