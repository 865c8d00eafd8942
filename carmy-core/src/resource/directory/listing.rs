//! The listing, kept while the directory is watched: walked once, then again only after the
//! watcher tells of a change (or of events it may have lost). Unwatched, nothing would tell
//! that a kept listing went stale, so none is kept and every list walks.

use std::sync::{Arc, Mutex};

use crate::{resource::ProvidedResource, sync::lock};

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
    /// The listing kept; or, when there is none, the generation a walk begun now belongs to.
    pub(super) fn kept(&self) -> Result<Vec<ProvidedResource>, u64> {
        let state = lock(&self.state);
        match &state.kept {
            Some(files) => Ok(files.to_vec()),
            None => Err(state.generation),
        }
    }

    /// Keeps `files`, walked in `generation`, if a watch runs and nothing changed since.
    pub(super) fn keep(&self, generation: u64, files: &[ProvidedResource]) {
        let mut state = lock(&self.state);
        if state.watches > 0 && state.generation == generation {
            state.kept = Some(files.into());
        }
    }

    /// Something changed, or may have: the listing kept is stale.
    pub(super) fn changed(&self) {
        let mut state = lock(&self.state);
        state.generation += 1;
        state.kept = None;
    }

    /// A watch started, its watcher in place: listings may be kept until the result is dropped.
    pub(super) fn watched(self: &Arc<Self>) -> Watched {
        let mut state = lock(&self.state);
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
        let mut state = lock(&self.0.state);
        state.watches -= 1;
        if state.watches == 0 {
            state.generation += 1;
            state.kept = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        path::Path,
        time::{Duration, Instant},
    };

    use super::{super::Directory, super::walk, *};
    use crate::resource::{ResourceChanges, ResourceProvider};

    #[test]
    fn only_a_walk_begun_while_watched_and_since_the_last_change_is_kept() {
        let listing = Arc::new(Listing::default());
        let files = [ProvidedResource::new("file:///srv/a.md", "a.md")];
        let walk = |listing: &Listing| listing.kept().unwrap_err();
        // Unwatched: nothing would tell it went stale.
        listing.keep(walk(&listing), &files);
        assert!(listing.kept().is_err());
        // Begun before the watcher was in place.
        let begun = walk(&listing);
        let watched = listing.watched();
        listing.keep(begun, &files);
        assert!(listing.kept().is_err());
        listing.keep(walk(&listing), &files);
        assert_eq!(listing.kept().unwrap(), files);
        // A change drops it, and a walk begun before the change is not kept.
        listing.changed();
        assert!(listing.kept().is_err());
        let begun = walk(&listing);
        listing.changed();
        listing.keep(begun, &files);
        assert!(listing.kept().is_err());
        // The last watch stopping drops it.
        listing.keep(walk(&listing), &files);
        let other = listing.watched();
        drop(watched);
        assert_eq!(listing.kept().unwrap(), files, "another watch runs");
        drop(other);
        assert!(listing.kept().is_err());
    }

    /// How many times the tree under `root` was walked.
    fn walks(root: &Path) -> usize {
        let walked = walk::WALKS.lock().unwrap();
        walked.iter().filter(|walked| *walked == root).count()
    }

    #[tokio::test]
    async fn a_watched_listing_is_walked_again_only_after_a_change() {
        let base = std::env::temp_dir().join(format!("carmy-listing-{}", std::process::id()));
        let tree = base.join("root");
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(tree.join("a")).unwrap();
        std::fs::write(tree.join("a/x.txt"), "x").unwrap();
        let directory = Directory::new(&tree)
            .unwrap()
            .debounce(Duration::from_millis(20));
        let root = directory.root().to_owned();
        let names = |files: &[ProvidedResource]| -> Vec<String> {
            files.iter().map(|file| file.name().to_owned()).collect()
        };
        // Unwatched, nothing would tell a kept listing is stale: every list walks.
        directory.list().await.unwrap();
        directory.list().await.unwrap();
        assert_eq!(walks(&root), 2);

        let watching = ResourceProvider::watch(&directory, ResourceChanges::detached()).unwrap();
        let first = directory.list().await.unwrap();
        assert_eq!(names(&first), ["a/x.txt"]);
        assert_eq!(directory.list().await.unwrap(), first);
        assert_eq!(walks(&root), 3, "kept while watched");

        // A change is walked again once the watcher tells it.
        std::fs::write(tree.join("a/new.txt"), "new").unwrap();
        let patience = Instant::now() + Duration::from_secs(20);
        loop {
            let files = directory.list().await.unwrap();
            if names(&files) == ["a/new.txt", "a/x.txt"] {
                break;
            }
            assert!(
                Instant::now() < patience,
                "never listed: {:?}",
                names(&files)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let after = walks(&root);
        directory.list().await.unwrap();
        assert_eq!(walks(&root), after, "kept again");

        // Nobody watches any more: nothing is kept.
        drop(watching);
        directory.list().await.unwrap();
        assert_eq!(walks(&root), after + 1);
        std::fs::remove_dir_all(base).unwrap();
    }
}
