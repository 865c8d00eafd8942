//! Listing the files under the root: depth first, each directory's entries by name, so the
//! order is the same on every run and every machine. Symbolic links are neither listed nor
//! followed (one could lead outside the root, or round in a circle); hidden names are skipped
//! unless served; the walk stops at a depth and a count.

use std::{fs, path::Path};

use super::{Settings, mime, uri};
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
    walk.directory(&settings.root, "", 0).map_err(|error| {
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
    /// Lists `path` (the root, or `relative` below it). Only the root's own failure is an
    /// error; a subdirectory that cannot be read is left out.
    fn directory(&mut self, path: &Path, relative: &str, depth: usize) -> std::io::Result<()> {
        let mut entries = fs::read_dir(path)?
            .filter_map(Result::ok)
            .filter_map(|entry| {
                // A name that is not UTF-8 has no URI or name to give; left out.
                let name = entry.file_name().into_string().ok()?;
                let kind = entry.file_type().ok()?;
                Some((name, kind, entry))
            })
            .collect::<Vec<_>>();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind, entry) in entries {
            if self.truncated {
                return Ok(());
            }
            if (!self.settings.hidden && name.starts_with('.')) || kind.is_symlink() {
                continue;
            }
            let child = if relative.is_empty() {
                name.clone()
            } else {
                format!("{relative}/{name}")
            };
            if kind.is_dir() {
                if depth + 1 < MAX_DEPTH
                    && let Err(error) = self.directory(&entry.path(), &child, depth + 1)
                {
                    tracing::debug!(%error, directory = %child, "a directory cannot be listed");
                }
            } else if kind.is_file() {
                if self.files.len() == self.settings.max_files {
                    self.truncated = true;
                    return Ok(());
                }
                let Some(path) = entry.path().to_str().map(str::to_owned) else {
                    continue;
                };
                let mut file = ProvidedResource::new(uri::uri_of(&path), child);
                if let Some(mime) = mime::of(&name) {
                    file = file.mime_type(mime);
                }
                if let Ok(metadata) = entry.metadata() {
                    file = file.size(metadata.len());
                }
                self.files.push(file);
            }
        }
        Ok(())
    }
}
