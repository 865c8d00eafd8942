//! The listing, kept while the directory is watched: walked once, then again only after the
//! watcher tells of a change (or of events it may have lost). Unwatched, nothing would tell
//! that a kept listing went stale, so none is kept and every list walks.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::resource::ProvidedResource;

/// The listing kept for one directory (its clones share it; a setting changed gets a new one).
#[derive(Debug, Default)]
pub(super) struct Listing {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The watches running: a directory may be served by several runtimes.
    watches: usize,
    /// Moves on at every change and every watch started: a walk begun before is not kept.
    generation: u64,
    kept: Option<Arc<[ProvidedResource]>>,
}

impl Listing {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The listing kept; or, when there is none, the generation a walk begun now belongs to.
    pub(super) fn kept(&self) -> Result<Vec<ProvidedResource>, u64> {
        let state = self.state();
        match &state.kept {
            Some(files) => Ok(files.to_vec()),
            None => Err(state.generation),
        }
    }

    /// Keeps `files`, walked in `generation`, if a watch runs and nothing changed since.
    pub(super) fn keep(&self, generation: u64, files: &[ProvidedResource]) {
        let mut state = self.state();
        if state.watches > 0 && state.generation == generation {
            state.kept = Some(files.into());
        }
    }

    /// Something changed, or may have: the listing kept is stale.
    pub(super) fn changed(&self) {
        let mut state = self.state();
        state.generation += 1;
        state.kept = None;
    }

    /// A watch started, its watcher in place: listings may be kept until the result is dropped.
    pub(super) fn watched(self: &Arc<Self>) -> Watched {
        let mut state = self.state();
        state.watches += 1;
        // A walk begun before the watcher was in place may have missed a change.
        state.generation += 1;
        Watched(Arc::clone(self))
    }
}

/// A watch running; dropped when it stops.
#[derive(Debug)]
pub(super) struct Watched(Arc<Listing>);

impl Drop for Watched {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.watches -= 1;
        if state.watches == 0 {
            state.generation += 1;
            state.kept = None;
        }
    }
}
