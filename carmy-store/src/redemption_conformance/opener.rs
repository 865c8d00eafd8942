//! How a scenario opens a fresh store, or a replica of one: [`RedemptionSetup`],
//! [`RedemptionOpener`], and [`check`], which runs one scenario in a scratch directory of its
//! own, on a runtime of its own.

use std::{
    future::Future,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use carmy_core::RedemptionStore;

use crate::scenario;

/// Where a scenario's store keeps its records. Replicas of one store are given the same setup,
/// and must share their records, as processes on one database do.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RedemptionSetup {
    /// A directory of the store's own, empty when it is first opened and removed when the
    /// scenario ends: where a store kept in files puts them.
    pub dir: PathBuf,
    /// A name of the store's own, made of lowercase letters, digits and `_`: a key prefix on a
    /// shared server, a schema in a shared database.
    pub name: String,
}

/// How a scenario opens stores: the closure given to
/// [`redemption_conformance_tests!`](crate::redemption_conformance_tests), run on a blocking
/// thread.
pub struct RedemptionOpener<S> {
    open: Arc<dyn Fn(RedemptionSetup) -> S + Send + Sync>,
    dir: PathBuf,
}

impl<S> Clone for RedemptionOpener<S> {
    fn clone(&self) -> Self {
        Self {
            open: Arc::clone(&self.open),
            dir: self.dir.clone(),
        }
    }
}

impl<S> std::fmt::Debug for RedemptionOpener<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedemptionOpener")
            .field("dir", &self.dir)
            .finish()
    }
}

impl<S: RedemptionStore> RedemptionOpener<S> {
    /// A fresh, empty store.
    pub async fn open(&self) -> Arc<S> {
        self.open_in(self.fresh()).await
    }

    /// A fresh, empty store and a replica of it: another store on the same records.
    pub async fn open_replicas(&self) -> (Arc<S>, Arc<S>) {
        let setup = self.fresh();
        let first = self.open_in(setup.clone()).await;
        let second = self.open_in(setup).await;
        (first, second)
    }

    /// A setup no store was opened with.
    fn fresh(&self) -> RedemptionSetup {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "redemption_{}_{}",
            NEXT.fetch_add(1, Ordering::Relaxed),
            uuid::Uuid::new_v4().simple()
        );
        let dir = self.dir.join(&name);
        std::fs::create_dir_all(&dir).expect("a scratch directory for the store");
        RedemptionSetup { dir, name }
    }

    /// The store `setup` describes, opened on a blocking thread (opening a file or a
    /// connection may block).
    async fn open_in(&self, setup: RedemptionSetup) -> Arc<S> {
        let open = Arc::clone(&self.open);
        let store = tokio::task::spawn_blocking(move || open(setup))
            .await
            .expect("opening the store panicked");
        Arc::new(store)
    }
}

/// Runs one scenario against stores opened by `open`, on a runtime of its own.
pub fn check<S, F, Fut>(name: &str, open: F, scenario: impl FnOnce(RedemptionOpener<S>) -> Fut)
where
    S: RedemptionStore,
    F: Fn(RedemptionSetup) -> S + Send + Sync + 'static,
    Fut: Future<Output = ()>,
{
    scenario::run("carmy-redemption-conformance", name, |dir| {
        scenario(RedemptionOpener {
            open: Arc::new(open),
            dir,
        })
    });
}
