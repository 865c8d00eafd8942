//! Watching the root: the operating system's file events (inotify, FSEvents, ...), debounced,
//! turned into the URIs that changed and whether the list did. The listing kept while watched
//! is dropped first, so that whoever is told and lists again sees the change.
//!
//! `notify-debouncer-full` rather than the mini debouncer: it keeps each event's kind, so a
//! file written (an update) is told from one created, removed or renamed (a list change too),
//! and it stitches a rename's two halves together. Symbolic links are not followed, so nothing
//! outside the root is watched. Opening and reading a file (which this server does) is an
//! access, not a change: ignored, or every read would announce an update.

use std::{collections::BTreeSet, path::Path, sync::Arc};

use notify_debouncer_full::{
    DebounceEventResult, DebouncedEvent, RecommendedCache, new_debouncer_opt,
    notify::{
        self, RecommendedWatcher, RecursiveMode,
        event::{AccessKind, AccessMode, EventKind, ModifyKind},
    },
};

use super::{Settings, listing::Listing, open::is_hidden, uri};
use crate::{
    error::AgentError,
    resource::{ResourceChanges, Watching},
};

/// Starts watching the root; reports reach `changes` until the result is dropped.
pub(super) fn watch(
    settings: Arc<Settings>,
    listing: Arc<Listing>,
    changes: ResourceChanges,
) -> Result<Watching, AgentError> {
    let handler = {
        let (settings, listing) = (Arc::clone(&settings), Arc::clone(&listing));
        move |result: DebounceEventResult| match result {
            Ok(events) => report(&settings, &listing, &changes, &events),
            Err(errors) => {
                for error in errors {
                    tracing::warn!(%error, "watching the served directory");
                }
                // Events may have been lost: lists may be stale.
                listing.changed();
                changes.list_changed();
            }
        }
    };
    let unavailable = |error: notify::Error| {
        AgentError::unavailable(
            super::codes::WATCH_FAILED,
            format!("the served directory cannot be watched: {error}"),
        )
    };
    let config = notify::Config::default().with_follow_symlinks(false);
    let mut debouncer = new_debouncer_opt::<_, RecommendedWatcher, RecommendedCache>(
        settings.debounce,
        None,
        handler,
        RecommendedCache::new(),
        config,
    )
    .map_err(unavailable)?;
    debouncer
        .watch(&settings.root, RecursiveMode::Recursive)
        .map_err(unavailable)?;
    // Listings are kept from now on: the watcher is in place to tell when they go stale.
    // Dropping both stops the debouncer's thread, closes the watch, and drops what was kept.
    Ok(Watching::new((debouncer, listing.watched())))
}

/// One debounced batch: each changed file's URI once, and the list once if it changed.
fn report(
    settings: &Settings,
    listing: &Listing,
    changes: &ResourceChanges,
    events: &[DebouncedEvent],
) {
    let mut stale = false;
    let mut list_changed = false;
    let mut updated = BTreeSet::new();
    for event in events {
        if event.need_rescan() {
            // The system dropped events: anything may have changed.
            (stale, list_changed) = (true, true);
            continue;
        }
        let structural = matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        );
        let written = matches!(
            event.kind,
            EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any | ModifyKind::Other)
                | EventKind::Access(AccessKind::Close(AccessMode::Write))
                | EventKind::Any
        );
        if !structural && !written {
            continue;
        }
        // Whatever it touched, the listing may show it (a name, a size).
        stale = true;
        for path in &event.paths {
            if let Some(uri) = uri_of(settings, path) {
                list_changed |= structural;
                updated.insert(uri);
            }
        }
    }
    if stale {
        listing.changed();
    }
    if list_changed {
        changes.list_changed();
    }
    for uri in &updated {
        changes.updated(uri);
    }
}

/// The URI of a path the watcher saw, if it is one the directory serves.
fn uri_of(settings: &Settings, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(&settings.root).ok()?;
    if relative.as_os_str().is_empty() || (!settings.hidden && is_hidden(relative)) {
        return None;
    }
    Some(uri::uri_of(path.to_str()?))
}
