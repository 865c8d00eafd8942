//! A directory below the root, held open while a read or the listing goes through it. Each
//! name is opened relative to it, one at a time, and the system never follows a symbolic link
//! on the way: a link is met and handed back with what it says, so that where it leads is
//! decided by the caller (`open.rs`), and a directory swapped for a link between two steps
//! leads nowhere unseen.
//!
//! On unix: `openat` with `O_NOFOLLOW` through rustix, and for a file also `O_NONBLOCK`, so
//! that a FIFO swapped in is opened without waiting for a writer and then refused by its type.
//! One name per call rather than `openat2`'s `RESOLVE_BENEATH`: that refuses every absolute
//! link, even into the root, does not say which file it reached (which the hidden and access
//! rules need), and older kernels lack it, so the walk here would be needed anyway.
//!
//! Elsewhere, the same steps on paths: a link is still met and decided by the caller, but a
//! directory swapped for a link between a step's look and its open can be followed.

use std::{fs::File, io, path::PathBuf};

/// What a name below a held directory turned out to be.
#[derive(Debug)]
pub(super) enum Found<T> {
    /// Opened: a directory, or a file of any kind (its type is the caller's to check).
    Opened(T),
    /// A symbolic link, not followed: its target as written.
    Link(PathBuf),
}

/// What an entry of a directory is, as listed; links are not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Directory,
    Link,
    /// A FIFO, a socket, a device, or what the system could not say.
    Other,
}

/// The entries of a directory: its names that are UTF-8 (others have no URI), and how many
/// entries were read, those included.
#[derive(Debug)]
pub(super) struct Entries {
    pub(super) names: Vec<(String, Kind)>,
    pub(super) read: usize,
}

/// A directory held open (unix) or named by its path (elsewhere).
#[derive(Debug)]
pub(super) struct DirHandle {
    #[cfg(unix)]
    fd: rustix::fd::OwnedFd,
    #[cfg(not(unix))]
    path: PathBuf,
}

#[cfg(unix)]
impl DirHandle {
    /// The root, by its canonical path; a link there is not followed.
    pub(super) fn root(path: &std::path::Path) -> io::Result<Self> {
        let fd = rustix::fs::openat(
            rustix::fs::CWD,
            path,
            Self::DIRECTORY,
            rustix::fs::Mode::empty(),
        )?;
        Ok(Self { fd })
    }

    /// Opened to be walked through, never through a link.
    const DIRECTORY: rustix::fs::OFlags = rustix::fs::OFlags::RDONLY
        .union(rustix::fs::OFlags::DIRECTORY)
        .union(rustix::fs::OFlags::NOFOLLOW)
        .union(rustix::fs::OFlags::CLOEXEC);

    /// Opened to be read: never through a link, never waiting (a FIFO, a device), never
    /// becoming the process's terminal.
    const FILE: rustix::fs::OFlags = rustix::fs::OFlags::RDONLY
        .union(rustix::fs::OFlags::NOFOLLOW)
        .union(rustix::fs::OFlags::NONBLOCK)
        .union(rustix::fs::OFlags::NOCTTY)
        .union(rustix::fs::OFlags::CLOEXEC);

    /// The directory `name` in this one.
    pub(super) fn directory(&self, name: &str) -> io::Result<Found<Self>> {
        self.open(name, Self::DIRECTORY, |fd| Self { fd })
    }

    /// The file `name` in this one, opened for reading, whatever its type.
    pub(super) fn file(&self, name: &str) -> io::Result<Found<File>> {
        self.open(name, Self::FILE, File::from)
    }

    fn open<T>(
        &self,
        name: &str,
        flags: rustix::fs::OFlags,
        opened: impl FnOnce(rustix::fd::OwnedFd) -> T,
    ) -> io::Result<Found<T>> {
        use std::os::unix::ffi::OsStringExt as _;
        match rustix::fs::openat(&self.fd, name, flags, rustix::fs::Mode::empty()) {
            Ok(fd) => Ok(Found::Opened(opened(fd))),
            // `O_NOFOLLOW` met a link (`ELOOP`, `EMLINK` on some systems), or the name cannot
            // be opened for another reason: the link itself says which.
            Err(error) => match rustix::fs::readlinkat(&self.fd, name, Vec::new()) {
                Ok(target) => Ok(Found::Link(PathBuf::from(std::ffi::OsString::from_vec(
                    target.into_bytes(),
                )))),
                Err(_) => Err(error.into()),
            },
        }
    }

    /// The entries of this directory, or `None` when it holds more than `at_most`.
    pub(super) fn entries(&self, at_most: usize) -> io::Result<Option<Entries>> {
        use rustix::fs::{AtFlags, FileType};
        let mut read = 0;
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            read += 1;
            if read > at_most {
                return Ok(None);
            }
            let Ok(name) = std::str::from_utf8(name) else {
                continue;
            };
            let kind = match entry.file_type() {
                // Some file systems do not say in the entry: asked of the name, not followed.
                FileType::Unknown => rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(FileType::Unknown, |stat| {
                        FileType::from_raw_mode(stat.st_mode)
                    }),
                known => known,
            };
            let kind = match kind {
                FileType::RegularFile => Kind::File,
                FileType::Directory => Kind::Directory,
                FileType::Symlink => Kind::Link,
                _ => Kind::Other,
            };
            names.push((name.to_owned(), kind));
        }
        Ok(Some(Entries { names, read }))
    }

    /// The size of the regular file `name` in this one, not following a link.
    pub(super) fn size(&self, name: &str) -> Option<u64> {
        use rustix::fs::{AtFlags, FileType};
        let stat = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile)
            .then(|| u64::try_from(stat.st_size).ok())
            .flatten()
    }
}

#[cfg(not(unix))]
impl DirHandle {
    /// The root, by its canonical path.
    pub(super) fn root(path: &std::path::Path) -> io::Result<Self> {
        if !std::fs::symlink_metadata(path)?.is_dir() {
            return Err(io::ErrorKind::NotADirectory.into());
        }
        Ok(Self {
            path: path.to_owned(),
        })
    }

    /// The directory `name` in this one.
    pub(super) fn directory(&self, name: &str) -> io::Result<Found<Self>> {
        let path = self.path.join(name);
        let metadata = std::fs::symlink_metadata(&path)?;
        if metadata.is_symlink() {
            return std::fs::read_link(&path).map(Found::Link);
        }
        if !metadata.is_dir() {
            return Err(io::ErrorKind::NotADirectory.into());
        }
        Ok(Found::Opened(Self { path }))
    }

    /// The file `name` in this one, opened for reading, whatever its type.
    pub(super) fn file(&self, name: &str) -> io::Result<Found<File>> {
        let path = self.path.join(name);
        if std::fs::symlink_metadata(&path)?.is_symlink() {
            return std::fs::read_link(&path).map(Found::Link);
        }
        File::open(&path).map(Found::Opened)
    }

    /// The entries of this directory, or `None` when it holds more than `at_most`.
    pub(super) fn entries(&self, at_most: usize) -> io::Result<Option<Entries>> {
        let mut read = 0;
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.path)? {
            let entry = entry?;
            read += 1;
            if read > at_most {
                return Ok(None);
            }
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let kind = match entry.file_type() {
                Ok(kind) if kind.is_symlink() => Kind::Link,
                Ok(kind) if kind.is_dir() => Kind::Directory,
                Ok(kind) if kind.is_file() => Kind::File,
                _ => Kind::Other,
            };
            names.push((name, kind));
        }
        Ok(Some(Entries { names, read }))
    }

    /// The size of the regular file `name` in this one, not following a link.
    pub(super) fn size(&self, name: &str) -> Option<u64> {
        let metadata = std::fs::symlink_metadata(self.path.join(name)).ok()?;
        metadata.is_file().then(|| metadata.len())
    }
}
