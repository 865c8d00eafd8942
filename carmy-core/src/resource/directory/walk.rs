//! Listing the files under the root: depth first, each directory's entries by name, so the
//! order is the same on every run and every machine. Each directory is read through the one
//! above it, held open (`handle.rs`), so a directory swapped for a link is not walked into.
//! Symbolic links are neither listed nor followed (one could lead outside the root, or round in
//! a circle); hidden names are skipped unless served. The walk's work is bounded: it reads at
//! most `max_entries` entries, goes at most `MAX_DEPTH` deep, and lists at most `max_files`.

use std::io;

use super::{
    Settings, codes,
    handle::{DirHandle, Found, Kind},
    mime, uri,
};
use crate::{error::AgentError, resource::ProvidedResource};

/// How deep the walk goes below the root.
pub(super) const MAX_DEPTH: usize = 32;

/// Tests only: the roots walked, one for each walk.
#[cfg(test)]
pub(super) static WALKS: std::sync::Mutex<Vec<std::path::PathBuf>> =
    std::sync::Mutex::new(Vec::new());

/// The files under the root, in order, within the walk's bounds.
pub(super) fn list(settings: &Settings) -> Result<Vec<ProvidedResource>, AgentError> {
    #[cfg(test)]
    WALKS.lock().unwrap().push(settings.root.clone());
    let mut walk = Walk {
        settings,
        files: Vec::new(),
        left: settings.max_entries,
        stopped: None,
        too_deep: false,
    };
    DirHandle::root(&settings.root)
        .and_then(|root| walk.directory(&root, "", 0))
        .map_err(|error| {
            AgentError::unavailable(
                codes::FILE_UNREADABLE,
                format!("the served directory cannot be listed: {error}"),
            )
        })?;
    walk.warn();
    Ok(walk.files)
}

/// The bound a walk stopped at.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Files,
    Entries,
}

struct Walk<'a> {
    settings: &'a Settings,
    files: Vec<ProvidedResource>,
    /// The entries it may still read.
    left: usize,
    stopped: Option<Stop>,
    /// Directories below `MAX_DEPTH` were left out.
    too_deep: bool,
}

impl Walk<'_> {
    /// Lists `directory` (the root, or `relative` below it). Only the root's own failure is an
    /// error; a subdirectory that cannot be read is left out.
    fn directory(&mut self, directory: &DirHandle, relative: &str, depth: usize) -> io::Result<()> {
        let Some(mut entries) = directory.entries(self.left)? else {
            // Stopped before this directory rather than part way through it (its entries come
            // unsorted): what is listed is what comes first in the full list.
            self.stopped = Some(Stop::Entries);
            return Ok(());
        };
        self.left -= entries.read;
        entries.names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in entries.names {
            if self.stopped.is_some() {
                return Ok(());
            }
            if !self.settings.hidden && name.starts_with('.') {
                continue;
            }
            let child = if relative.is_empty() {
                name.clone()
            } else {
                format!("{relative}/{name}")
            };
            match kind {
                Kind::Directory if depth + 1 >= MAX_DEPTH => self.too_deep = true,
                Kind::Directory => match directory.directory(&name) {
                    Ok(Found::Opened(below)) => {
                        if let Err(error) = self.directory(&below, &child, depth + 1) {
                            tracing::debug!(%error, directory = %child, "a directory cannot be listed");
                        }
                    }
                    // Swapped for a link since it was read: not followed.
                    Ok(Found::Link(_)) => {}
                    Err(error) => {
                        tracing::debug!(%error, directory = %child, "a directory cannot be listed");
                    }
                },
                Kind::File => {
                    if self.files.len() == self.settings.max_files {
                        self.stopped = Some(Stop::Files);
                        return Ok(());
                    }
                    let path = format!("{}/{child}", self.settings.root_text);
                    let mut file = ProvidedResource::new(uri::uri_of(&path), child);
                    if let Some(mime) = mime::of(&name) {
                        file = file.mime_type(mime);
                    }
                    if let Some(size) = directory.size(&name) {
                        file = file.size(size);
                    }
                    self.files.push(file);
                }
                Kind::Link | Kind::Other => {}
            }
        }
        Ok(())
    }

    /// Says in the log why the listing is shorter than the tree, if it is.
    fn warn(&self) {
        let root = self.settings.root.display();
        match self.stopped {
            Some(Stop::Files) => tracing::warn!(
                code = codes::LISTING_TRUNCATED,
                %root,
                max_files = self.settings.max_files,
                "the served directory holds more files than are listed"
            ),
            Some(Stop::Entries) => tracing::warn!(
                code = codes::LISTING_TRUNCATED,
                %root,
                max_entries = self.settings.max_entries,
                "the served directory holds more entries than a listing reads"
            ),
            None => {}
        }
        if self.too_deep {
            tracing::warn!(
                code = codes::LISTING_TRUNCATED,
                %root,
                max_depth = MAX_DEPTH,
                "the served directory is deeper than a listing goes"
            );
        }
    }
}
