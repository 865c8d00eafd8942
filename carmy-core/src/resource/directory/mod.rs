//! [`Directory`]: the files under a directory as resources, watched for changes.

mod file;
mod handle;
mod listing;
mod mime;
mod open;
#[cfg(test)]
mod races;
mod uri;
mod walk;
mod watcher;

use std::{
    io,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use super::{Contents, ProvidedResource, ResourceChanges, ResourceProvider, Watching};
use crate::{context::Context, error::AgentError, tool::Invocation};

/// The largest file read by default: 4 MiB (a blob travels base64-encoded, a third larger).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The most files listed by default.
pub const DEFAULT_MAX_FILES: usize = 10_000;

/// The most directory entries a listing reads by default: ten for each file it may list.
pub const DEFAULT_MAX_ENTRIES: usize = 100_000;

/// How long changes settle before they are reported, by default.
const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

/// The error codes a [`Directory`] answers with, besides `RESOURCE_NOT_FOUND` (no such file,
/// a directory, a hidden file).
pub mod codes {
    /// The URI is not one the directory serves, whatever is on disk: another scheme or host,
    /// `.` or `..` segments (raw or percent-encoded), backslashes, NUL bytes, empty segments,
    /// a query or fragment, a bad escape or a path that is not UTF-8. Its category is "not
    /// found": such a URI names no resource here, and it is answered as any other that names
    /// none (MCP's "resource not found"), telling nothing of what is on disk.
    pub const INVALID_FILE_URI: &str = "INVALID_FILE_URI";
    /// The path is outside the served directory, or a symbolic link inside it leads outside
    /// (whether or not anything is there: nothing outside is looked at).
    pub const OUTSIDE_ROOT: &str = "OUTSIDE_ROOT";
    /// The file is larger than [`Directory::max_file_bytes`](super::Directory::max_file_bytes).
    pub const FILE_TOO_LARGE: &str = "FILE_TOO_LARGE";
    /// The file or the directory could not be read (permissions, I/O).
    pub const FILE_UNREADABLE: &str = "FILE_UNREADABLE";
    /// The directory could not be watched for changes (e.g. the system's watch limit).
    pub const WATCH_FAILED: &str = "WATCH_FAILED";
    /// Not an answer to a client: the `code` of the warning logged when a listing stops short
    /// of the tree, at [`max_files`](super::Directory::max_files),
    /// [`max_entries`](super::Directory::max_entries) or the depth bound. The files past it
    /// can still be read.
    pub const LISTING_TRUNCATED: &str = "LISTING_TRUNCATED";
}

/// Serves the files under a directory: listed recursively (in a deterministic order), each at
/// the `file://` URI of its absolute path with its relative path as name, a MIME type (by
/// extension) and a size; read as text when they are text, as bytes otherwise; watched, so
/// that subscribers hear of edits and lists of files appearing or disappearing. A listing is
/// bounded by [`max_files`](Self::max_files) and [`max_entries`](Self::max_entries); while the
/// directory is watched it is kept, and walked again only once a change has settled.
///
/// Nothing outside the root is ever listed or read, whatever the URI says: URIs are accepted
/// only in the form the list gives (no `..`, `.`, backslash, NUL, other host...; see
/// [`codes::INVALID_FILE_URI`]), the path is opened one name at a time from the root, and a
/// symbolic link inside the root is followed only while it stays inside (one that leads out is
/// [`codes::OUTSIDE_ROOT`], whatever is there); only regular files are read, and a caller's
/// access rules apply to the file a link reaches as to the URI asked. Links are never listed.
/// Hidden files (a name starting with `.`, at any depth) are
/// neither listed nor read unless [`hidden`](Self::hidden) says so. Files larger than
/// [`max_file_bytes`](Self::max_file_bytes) are refused with [`codes::FILE_TOO_LARGE`].
///
/// ```
/// use carmy_core::{Body, Carmy, Directory, Request};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// # let root = std::env::temp_dir().join(format!("carmy-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(root.join("policies"))?;
/// std::fs::write(root.join("policies/returns.md"), "Within 30 days.")?;
///
/// let docs = Directory::new(&root)?.name("docs").max_file_bytes(1024 * 1024);
/// let uri = docs.uri_of("policies/returns.md").unwrap();
/// let runtime = Carmy::new().resource_provider(docs).build()?;
///
/// let files = runtime.list_provided(&Default::default()).await?;
/// assert_eq!(files[0].name(), "policies/returns.md");
/// assert_eq!(files[0].uri(), uri);
/// let contents = runtime.read(Request::read(&uri)).await.result?;
/// assert_eq!(contents.iter().next().unwrap().body(), &Body::Text("Within 30 days.".into()));
///
/// let escape = uri.replace("policies/returns.md", "../../etc/passwd");
/// assert_eq!(runtime.read(Request::read(escape)).await.unwrap_error_code(), "INVALID_FILE_URI");
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Directory {
    settings: Arc<Settings>,
    listing: Arc<listing::Listing>,
}

#[derive(Clone, Debug)]
struct Settings {
    /// Canonical: absolute, no symbolic link, no `.` or `..`.
    root: PathBuf,
    /// The same, as text (a root that is not UTF-8 is refused).
    root_text: String,
    name: &'static str,
    max_file_bytes: u64,
    max_files: usize,
    max_entries: usize,
    hidden: bool,
    watch: bool,
    debounce: Duration,
}

impl Directory {
    /// Serves the directory at `root`, resolved now to its canonical path (which every URI
    /// names). Fails if it is not a directory, or its path is not UTF-8 and absolute with `/`
    /// separators.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::fs::canonicalize(root.as_ref())?;
        if !std::fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{}` is not a directory", root.display()),
            ));
        }
        let root_text = root
            .to_str()
            .filter(|text| text.starts_with('/') && !text.contains('\\'))
            .map(str::to_owned)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "`{}` cannot be served: its path must be UTF-8, absolute, with `/` separators",
                        root.display()
                    ),
                )
            })?;
        // The file system's root: its children are `/name`, not `//name`.
        let root_text = if root_text == "/" {
            String::new()
        } else {
            root_text
        };
        Ok(Self {
            settings: Arc::new(Settings {
                root,
                root_text,
                name: "files",
                max_file_bytes: DEFAULT_MAX_FILE_BYTES,
                max_files: DEFAULT_MAX_FILES,
                max_entries: DEFAULT_MAX_ENTRIES,
                hidden: false,
                watch: true,
                debounce: DEFAULT_DEBOUNCE,
            }),
            listing: Arc::default(),
        })
    }

    fn settings(&mut self) -> &mut Settings {
        // Another setting, another listing: not the one a clone of the old settings keeps.
        self.listing = Arc::default();
        Arc::make_mut(&mut self.settings)
    }

    /// Its name in execution records and logs (`files` by default); unique in the catalog.
    pub fn name(mut self, name: &'static str) -> Self {
        self.settings().name = name;
        self
    }

    /// The largest file read, in bytes ([`DEFAULT_MAX_FILE_BYTES`] by default); a larger one is
    /// refused with [`codes::FILE_TOO_LARGE`] (the read is recorded as failed).
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.settings().max_file_bytes = bytes;
        self
    }

    /// The most files listed ([`DEFAULT_MAX_FILES`] by default): past it the list stops, in
    /// order, with a warning in the log ([`codes::LISTING_TRUNCATED`]). Files past it can still
    /// be read.
    pub fn max_files(mut self, files: usize) -> Self {
        self.settings().max_files = files;
        self
    }

    /// The most directory entries a listing reads ([`DEFAULT_MAX_ENTRIES`] by default): files,
    /// directories, links and hidden names alike, at every depth, so that a tree of empty
    /// directories costs no more than one of files. The walk stops before the first directory
    /// that would take it past the bound: what is listed is what comes first in the full list,
    /// and the log warns ([`codes::LISTING_TRUNCATED`]). Files past it can still be read.
    pub fn max_entries(mut self, entries: usize) -> Self {
        self.settings().max_entries = entries;
        self
    }

    /// Whether hidden files (a name starting with `.`, at any depth: `.env`, `.git/`) are
    /// served; not by default.
    pub fn hidden(mut self, served: bool) -> Self {
        self.settings().hidden = served;
        self
    }

    /// Whether the directory is watched for changes (on by default): off, it reports none and
    /// adapters advertise no subscriptions for it.
    pub fn watch(mut self, watched: bool) -> Self {
        self.settings().watch = watched;
        self
    }

    /// How long changes settle before they are reported (200 ms by default): a burst of writes
    /// to one file is one update.
    pub fn debounce(mut self, settle: Duration) -> Self {
        self.settings().debounce = settle;
        self
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.settings.root
    }

    /// The URI of the file at `relative` (`policies/returns.md`) below the root, as the list
    /// gives it; `None` for a path that could not be served (`..`, an absolute path...).
    pub fn uri_of(&self, relative: &str) -> Option<String> {
        let uri = uri::uri_of(&format!("{}/{relative}", self.settings.root_text));
        uri::locate(&self.settings.root_text, &uri, self.settings.hidden)
            .ok()
            .map(|_| uri)
    }
}

impl ResourceProvider for Directory {
    fn name(&self) -> &'static str {
        self.settings.name
    }

    fn claims(&self, uri: &str) -> bool {
        uri::claims(&self.settings.root_text, uri)
    }

    async fn list(&self) -> Result<Vec<ProvidedResource>, AgentError> {
        let generation = match self.listing.kept() {
            Ok(files) => return Ok(files),
            Err(generation) => generation,
        };
        let (settings, listing) = (Arc::clone(&self.settings), Arc::clone(&self.listing));
        blocking(move || {
            let files = walk::list(&settings)?;
            listing.keep(generation, &files);
            Ok(files)
        })
        .await
    }

    async fn read(&self, uri: &str, invocation: Invocation) -> Result<Contents, AgentError> {
        // The first wall: the URI alone, before the disk is asked.
        let segments = uri::locate(&self.settings.root_text, uri, self.settings.hidden)?;
        let (settings, uri) = (Arc::clone(&self.settings), uri.to_owned());
        let context = invocation.context_owned();
        blocking(move || file::read(&settings, &uri, &segments, &context)).await
    }

    async fn check(&self, uri: &str, context: &Context) -> Result<(), AgentError> {
        // The same walls as a read, without reading the file.
        let segments = uri::locate(&self.settings.root_text, uri, self.settings.hidden)?;
        let (settings, uri) = (Arc::clone(&self.settings), uri.to_owned());
        let context = context.clone();
        blocking(move || file::check(&settings, &uri, &segments, &context)).await
    }

    fn reports_changes(&self) -> bool {
        self.settings.watch
    }

    fn watch(&self, changes: ResourceChanges) -> Result<Watching, AgentError> {
        if !self.settings.watch {
            return Ok(Watching::none());
        }
        watcher::watch(
            Arc::clone(&self.settings),
            Arc::clone(&self.listing),
            changes,
        )
    }
}

/// Runs file system work on tokio's blocking pool. A read cancelled or timed out is no longer
/// awaited; the work itself ends on its own, bounded by the size limit.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AgentError> + Send + 'static,
) -> Result<T, AgentError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => Err(AgentError::unavailable(
            codes::FILE_UNREADABLE,
            "the server is shutting down",
        )),
    }
}
