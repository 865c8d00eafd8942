//! How a scenario opens a fresh store: [`Setup`], [`Opener`], and [`check`], which runs one
//! scenario in a scratch directory of its own, on a runtime of its own.

use std::{future::Future, path::PathBuf, sync::Arc};

use carmy_core::IdempotencyStore;

use crate::scenario::{self, Stores};

/// What a scenario asks of the store it opens.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Setup {
    /// The most keys one principal may hold (the store's `request_ids.max_per_principal`).
    pub max_entries_per_principal: usize,
    /// An empty directory of the scenario's own, removed when it ends: where a store kept in
    /// files puts them.
    pub dir: PathBuf,
}

/// How a scenario opens a fresh store: the closure given to
/// [`conformance_tests!`](crate::conformance_tests), run on a blocking thread (opening a file or
/// a connection may block).
pub struct Opener<S> {
    stores: Stores<Setup, S>,
}

impl<S> Clone for Opener<S> {
    fn clone(&self) -> Self {
        Self {
            stores: self.stores.clone(),
        }
    }
}

impl<S> std::fmt::Debug for Opener<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opener")
            .field("dir", &self.stores.dir)
            .finish()
    }
}

impl<S: IdempotencyStore> Opener<S> {
    /// A fresh store with the default bounds.
    pub async fn open(&self) -> Arc<S> {
        self.open_with(10_000).await
    }

    /// A fresh store holding at most `max_entries_per_principal` keys per principal.
    pub async fn open_with(&self, max_entries_per_principal: usize) -> Arc<S> {
        self.stores
            .open(|dir| Setup {
                max_entries_per_principal,
                dir,
            })
            .await
    }
}

/// Runs one scenario against stores opened by `open`, on a runtime of its own.
pub fn check<S, F, Fut>(name: &str, open: F, scenario: impl FnOnce(Opener<S>) -> Fut)
where
    S: IdempotencyStore,
    F: Fn(Setup) -> S + Send + Sync + 'static,
    Fut: Future<Output = ()>,
{
    scenario::run("carmy-conformance", name, |dir| {
        scenario(Opener {
            stores: Stores::new(open, dir),
        })
    });
}
