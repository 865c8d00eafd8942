//! Listing the files under the root: depth first, each directory's entries by name, so the
//! order is the same on every run and every machine. Each directory is read through the one
//! above it, held open (`handle.rs`), so a directory swapped for a link is not walked into.
//! Symbolic links are neither listed nor followed (one could lead outside the root, or round in
//! a circle); hidden names are skipped unless served; the walk stops at a depth and a count.

use std::io;

use super::{
    Settings,
    handle::{DirHandle, Found, Kind},
    mime, uri,
};
use crate::{error::AgentError, resource::ProvidedResource};

/// How deep the walk goes below the root.
pub(super) const MAX_DEPTH: usize = 32;

/// The files under the root, in order; at most `max_files` of them.
pub(super) fn list(settings: &Settings) -> Result<Vec<ProvidedResource>, AgentError> {
    let mut files = Vec::new();
    let mut walk = Walk {
        settings,
        files: &mut files,
        truncated: false,
    };
    DirHandle::root(&settings.root)
        .and_then(|root| walk.directory(&root, "", 0))
        .map_err(|error| {
            AgentError::unavailable(
                super::codes::FILE_UNREADABLE,
                format!("the served directory cannot be listed: {error}"),
            )
        })?;
    if walk.truncated {
        tracing::warn!(
            root = %settings.root.display(),
            max_files = settings.max_files,
            "the served directory holds more files than are listed"
        );
    }
    Ok(files)
}

struct Walk<'a> {
    settings: &'a Settings,
    files: &'a mut Vec<ProvidedResource>,
    truncated: bool,
}

impl Walk<'_> {
    /// Lists `directory` (the root, or `relative` below it). Only the root's own failure is an
    /// error; a subdirectory that cannot be read is left out.
    fn directory(&mut self, directory: &DirHandle, relative: &str, depth: usize) -> io::Result<()> {
        let Some(mut entries) = directory.entries(usize::MAX)? else {
            return Ok(());
        };
        entries.names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in entries.names {
            if self.truncated {
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
                Kind::Directory if depth + 1 < MAX_DEPTH => match directory.directory(&name) {
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
                        self.truncated = true;
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
                Kind::Directory | Kind::Link | Kind::Other => {}
            }
        }
        Ok(())
    }
}
