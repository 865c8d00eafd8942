//! Reaching the file a URI's segments name: the second wall, after `uri.rs`.
//!
//! The path is walked one name at a time from the root, each directory held open
//! (`handle.rs`), and symbolic links are resolved here rather than by the system. A link is
//! followed only while it stays inside the root: its target read as written, `..` going back
//! to the directory held before (never above the root), an absolute target only below the
//! root's own path. Where a link leads outside, nothing there is opened or asked about, so the
//! answer is the same whether anything is there. What is opened last is checked for what it
//! is, a regular file, and the path it was reached at decides the hidden rule and, where links
//! led there, the caller's access rules.

use std::{
    collections::VecDeque,
    fs::{File, Metadata},
    io,
    path::{Component, Path},
};

use super::{
    Settings,
    handle::{DirHandle, Found},
};

/// The most symbolic links followed on one path, as the system allows.
const MAX_LINKS: usize = 40;

/// A regular file below the root, open.
#[derive(Debug)]
pub(super) struct Reached {
    pub(super) file: File,
    /// Of the file opened.
    pub(super) metadata: Metadata,
    /// Its path below the root, `/`-separated, once every link on the way was followed.
    pub(super) relative: String,
}

/// Why no file was reached.
#[derive(Debug)]
pub(super) enum Unreached {
    /// Nothing there, not a regular file, or hidden.
    NotFound,
    /// A symbolic link on the way leads outside the root.
    Outside,
    /// Links led to a path the caller's rules leave out.
    NotAllowed,
    /// The file or a directory on the way cannot be read.
    Unreadable(io::Error),
}

/// The file that `segments` (checked by `uri::locate`) name below the root. `allowed` says
/// whether the caller may read a path below the root (`a/b.md`) that links led to.
pub(super) fn open(
    settings: &Settings,
    segments: &[String],
    allowed: impl Fn(&str) -> bool,
) -> Result<Reached, Unreached> {
    let root = DirHandle::root(&settings.root).map_err(Unreached::Unreadable)?;
    // The directories held below the root, each with its name: where the walk stands.
    let mut held: Vec<(DirHandle, String)> = Vec::new();
    // The names still to go, the next first.
    let mut ahead: VecDeque<String> = segments.iter().cloned().collect();
    let mut links = 0;
    while let Some(name) = ahead.pop_front() {
        if name == ".." {
            if held.pop().is_none() {
                return Err(Unreached::Outside);
            }
            continue;
        }
        #[cfg(test)]
        hook::step();
        let parent = held.last().map_or(&root, |(directory, _)| directory);
        let target = if ahead.is_empty() {
            match parent.file(&name) {
                Ok(Found::Link(target)) => target,
                Ok(Found::Opened(file)) => {
                    ruled(links, &held, [name.as_str()], &allowed)?;
                    return reached(settings, &held, &name, file);
                }
                Err(error) => {
                    ruled(links, &held, [name.as_str()], &allowed)?;
                    return Err(unreached(error));
                }
            }
        } else {
            match parent.directory(&name) {
                Ok(Found::Link(target)) => target,
                Ok(Found::Opened(directory)) => {
                    held.push((directory, name));
                    continue;
                }
                Err(error) => {
                    let rest = [name.as_str()]
                        .into_iter()
                        .chain(ahead.iter().map(String::as_str));
                    ruled(links, &held, rest, &allowed)?;
                    return Err(unreached(error));
                }
            }
        };
        links += 1;
        if links > MAX_LINKS {
            return Err(Unreached::Unreadable(io::Error::other(format!(
                "more than {MAX_LINKS} symbolic links on the way"
            ))));
        }
        let names = follow(settings, &target, &mut held)?;
        for name in names.into_iter().rev() {
            ahead.push_front(name);
        }
    }
    // The names ran out at a directory (a link to one, or `..`): no file.
    ruled(links, &held, [], &allowed)?;
    Err(Unreached::NotFound)
}

/// Where links led, the caller's rules decide on the path reached below the root (or the one
/// that would be, had everything on the way been there), whatever is there: they tell nothing
/// of what exists where they may not read. Without a link, the path is the URI asked, which
/// the runtime checked.
fn ruled<'a>(
    links: usize,
    held: &'a [(DirHandle, String)],
    rest: impl IntoIterator<Item = &'a str>,
    allowed: impl Fn(&str) -> bool,
) -> Result<(), Unreached> {
    if links == 0 {
        return Ok(());
    }
    let mut path: Vec<&str> = held.iter().map(|(_, name)| name.as_str()).collect();
    for name in rest {
        if name == ".." {
            path.pop().ok_or(Unreached::Outside)?;
        } else {
            path.push(name);
        }
    }
    if allowed(&path.join("/")) {
        Ok(())
    } else {
        Err(Unreached::NotAllowed)
    }
}

/// The names a link's `target` puts ahead. An absolute target starts again from the root,
/// which it must lie below.
fn follow(
    settings: &Settings,
    target: &Path,
    held: &mut Vec<(DirHandle, String)>,
) -> Result<Vec<String>, Unreached> {
    let below = if target.is_absolute() {
        let below = target
            .strip_prefix(&settings.root)
            .map_err(|_| Unreached::Outside)?;
        held.clear();
        below
    } else {
        target
    };
    let mut names = Vec::new();
    for component in below.components() {
        match component {
            Component::Normal(name) => {
                // A name that is not UTF-8 has no URI: nothing served is there.
                let name = name.to_str().ok_or(Unreached::NotFound)?;
                names.push(name.to_owned());
            }
            Component::ParentDir => names.push("..".to_owned()),
            Component::CurDir => {}
            // A drive or a root in a relative target: somewhere else.
            Component::RootDir | Component::Prefix(_) => return Err(Unreached::Outside),
        }
    }
    Ok(names)
}

/// The file opened as `name` in the last directory held, if it is one that is served.
fn reached(
    settings: &Settings,
    held: &[(DirHandle, String)],
    name: &str,
    file: File,
) -> Result<Reached, Unreached> {
    let relative = held
        .iter()
        .map(|(_, directory)| directory.as_str())
        .chain([name])
        .collect::<Vec<_>>()
        .join("/");
    if !settings.hidden && is_hidden(Path::new(&relative)) {
        return Err(Unreached::NotFound);
    }
    // What was opened, not what the path said a moment before.
    let metadata = file.metadata().map_err(Unreached::Unreadable)?;
    if !metadata.is_file() {
        return Err(Unreached::NotFound);
    }
    Ok(Reached {
        file,
        metadata,
        relative,
    })
}

/// Whether a path below the root has a component whose name starts with `.`.
pub(super) fn is_hidden(relative: &Path) -> bool {
    relative.components().any(|component| match component {
        Component::Normal(name) => name.as_encoded_bytes().starts_with(b"."),
        _ => false,
    })
}

fn unreached(error: io::Error) -> Unreached {
    match error.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => Unreached::NotFound,
        _ => Unreached::Unreadable(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_is_any_name_starting_with_a_dot() {
        assert!(is_hidden(Path::new("a/.git/config")));
        assert!(is_hidden(Path::new(".env")));
        assert!(!is_hidden(Path::new("a/b.md")));
    }
}

/// Tests only: a hook run before each name is opened below the root, to change the disk at a
/// chosen step.
#[cfg(test)]
pub(super) mod hook {
    use std::cell::RefCell;

    thread_local! {
        static STEP: RefCell<Option<Box<dyn FnMut()>>> = RefCell::new(None);
    }

    /// Runs this thread's hook, if it has one.
    pub(in super::super) fn step() {
        STEP.with(|hook| {
            if let Some(hook) = hook.borrow_mut().as_mut() {
                hook();
            }
        });
    }

    /// Sets (or with `None`, removes) this thread's hook.
    pub(in super::super) fn set(hook: Option<Box<dyn FnMut()>>) {
        STEP.with(|cell| *cell.borrow_mut() = hook);
    }
}
