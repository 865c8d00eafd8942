//! Resource providers: resources that are not known when the runtime is built (the files of a
//! directory, the rows of a table), listed and read on demand.
//!
//! A provider claims URIs cheaply, lists what it serves now, reads one URI, and may report
//! changes through [`ResourceChanges`](super::ResourceChanges). The catalog's own resources
//! come first: a URI a fixed resource or a template matches is never asked of a provider, and
//! providers are asked in registration order. A provider's read goes through the runtime's
//! read steps like any other: admitted, guarded (deadline, cancellation, panics) and recorded,
//! under the provider's name.

use std::{future::Future, pin::Pin, time::Duration};

use super::{Contents, ResourceChanges, Watching};
use crate::{context::Context, error::AgentError, tool::Invocation};

/// One resource a provider serves, as its list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvidedResource {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    size: Option<u64>,
}

impl ProvidedResource {
    /// The resource at `uri`, named `name` for people and models.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    /// A human-friendly display name.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What it holds, for the model.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The MIME type of its contents.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Its size in bytes.
    #[must_use]
    pub fn size(mut self, bytes: u64) -> Self {
        self.size = Some(bytes);
        self
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The display name, if any.
    pub fn title_text(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The description, if any.
    pub fn description_text(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The MIME type, if known.
    pub fn mime_type_of(&self) -> Option<&str> {
        self.mime_type.as_deref()
    }

    /// The size in bytes, if known.
    pub fn size_bytes(&self) -> Option<u64> {
        self.size
    }
}

/// Resources that are not known when the runtime is built: registered with
/// [`Carmy::resource_provider`](crate::Carmy::resource_provider).
///
/// ```
/// use carmy_core::{
///     AgentError, Body, Carmy, Content, Contents, Invocation, ProvidedResource, Request,
///     ResourceProvider,
/// };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
///
/// /// Notes kept in memory, at `notes://<name>`.
/// struct Notes(Vec<(&'static str, &'static str)>);
///
/// impl ResourceProvider for Notes {
///     fn name(&self) -> &'static str {
///         "notes"
///     }
///
///     fn claims(&self, uri: &str) -> bool {
///         uri.starts_with("notes://")
///     }
///
///     async fn list(&self) -> Result<Vec<ProvidedResource>, AgentError> {
///         Ok(self.0.iter().map(|(name, _)| {
///             ProvidedResource::new(format!("notes://{name}"), *name).mime_type("text/plain")
///         }).collect())
///     }
///
///     async fn read(&self, uri: &str, _: Invocation) -> Result<Contents, AgentError> {
///         let name = uri.trim_start_matches("notes://");
///         match self.0.iter().find(|(known, _)| *known == name) {
///             Some((_, text)) => Ok(Content::text(*text).mime_type("text/plain").into()),
///             None => Err(AgentError::not_found("NOTE_NOT_FOUND", format!("no note `{name}`"))),
///         }
///     }
/// }
///
/// let runtime = Carmy::new().resource_provider(Notes(vec![("todo", "Ship it.")])).build()?;
/// let outcome = runtime.read(Request::read("notes://todo")).await;
/// assert_eq!(outcome.result?.iter().next().unwrap().body(), &Body::Text("Ship it.".into()));
/// assert_eq!(runtime.read(Request::read("notes://none")).await.unwrap_error_code(), "NOTE_NOT_FOUND");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Carmy resource provider",
    label = "not a resource provider",
    note = "implement `ResourceProvider`: a `name`, `claims(uri)`, `async fn list` and `async fn read`; for a directory, use `carmy::resources::Directory` (feature `fs`)"
)]
pub trait ResourceProvider: Send + Sync + 'static {
    /// Names the provider in execution records and logs; unique among the catalog's resources
    /// and providers.
    fn name(&self) -> &'static str;

    /// Whether `uri` is this provider's to answer, read or refused. Called for every URI no
    /// resource of the catalog matched, so it must be cheap: no I/O.
    fn claims(&self, uri: &str) -> bool;

    /// What it serves now, in a deterministic order.
    fn list(&self) -> impl Future<Output = Result<Vec<ProvidedResource>, AgentError>> + Send;

    /// Reads `uri`, which [`claims`](Self::claims) accepted. The runtime enforces the deadline
    /// and cancellation by dropping this future.
    fn read(
        &self,
        uri: &str,
        invocation: Invocation,
    ) -> impl Future<Output = Result<Contents, AgentError>> + Send;

    /// Whether `uri`, which [`claims`](Self::claims) accepted, names something it serves now
    /// that the caller of `context` may read, found without reading it: `Ok`, or the error its
    /// read would give. Adapters ask before following a URI (a subscription), so that a client
    /// follows only what it could read. The runtime has applied the context's access rules to
    /// `uri`; a provider whose URIs can lead elsewhere (a link) applies them where they lead,
    /// as its read does. By default every claimed URI is accepted.
    fn check(
        &self,
        uri: &str,
        context: &Context,
    ) -> impl Future<Output = Result<(), AgentError>> + Send {
        let _ = (uri, context);
        std::future::ready(Ok(()))
    }

    /// The deadline of each read and each list, replacing the runtime's default.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether it reports changes through [`watch`](Self::watch) (adapters advertise
    /// subscriptions and list changes then).
    fn reports_changes(&self) -> bool {
        false
    }

    /// Starts reporting changes to `changes` until the returned [`Watching`] is dropped. The
    /// runtime calls it when the first watcher of its resources arrives
    /// ([`Runtime::watch_resources`](crate::Runtime::watch_resources)) and drops the result
    /// when the last one leaves.
    fn watch(&self, changes: ResourceChanges) -> Result<Watching, AgentError> {
        let _ = changes;
        Ok(Watching::none())
    }
}

/// A future borrowing the provider and the URI.
pub(crate) type ProviderFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, AgentError>> + Send + 'a>>;

/// A provider behind an object: its async methods boxed.
pub(crate) trait ErasedProvider: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    fn claims(&self, uri: &str) -> bool;
    fn list(&self) -> ProviderFuture<'_, Vec<ProvidedResource>>;
    fn read<'a>(&'a self, uri: &'a str, invocation: Invocation) -> ProviderFuture<'a, Contents>;
    fn check<'a>(&'a self, uri: &'a str, context: &'a Context) -> ProviderFuture<'a, ()>;
    fn timeout(&self) -> Option<Duration>;
    fn reports_changes(&self) -> bool;
    fn watch(&self, changes: ResourceChanges) -> Result<Watching, AgentError>;
}

impl<P: ResourceProvider> ErasedProvider for P {
    fn name(&self) -> &'static str {
        ResourceProvider::name(self)
    }

    fn claims(&self, uri: &str) -> bool {
        ResourceProvider::claims(self, uri)
    }

    fn list(&self) -> ProviderFuture<'_, Vec<ProvidedResource>> {
        Box::pin(ResourceProvider::list(self))
    }

    fn read<'a>(&'a self, uri: &'a str, invocation: Invocation) -> ProviderFuture<'a, Contents> {
        Box::pin(ResourceProvider::read(self, uri, invocation))
    }

    fn check<'a>(&'a self, uri: &'a str, context: &'a Context) -> ProviderFuture<'a, ()> {
        Box::pin(ResourceProvider::check(self, uri, context))
    }

    fn timeout(&self) -> Option<Duration> {
        ResourceProvider::timeout(self)
    }

    fn reports_changes(&self) -> bool {
        ResourceProvider::reports_changes(self)
    }

    fn watch(&self, changes: ResourceChanges) -> Result<Watching, AgentError> {
        ResourceProvider::watch(self, changes)
    }
}

/// One provider of the catalog, with its deadline resolved.
pub struct ProviderEntry {
    pub(crate) provider: std::sync::Arc<dyn ErasedProvider>,
    pub(crate) timeout: Duration,
}

impl ProviderEntry {
    /// Its name.
    pub fn name(&self) -> &'static str {
        self.provider.name()
    }

    /// Whether it claims `uri`.
    pub fn claims(&self, uri: &str) -> bool {
        self.provider.claims(uri)
    }

    /// The deadline of each read and list.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether it reports changes.
    pub fn reports_changes(&self) -> bool {
        self.provider.reports_changes()
    }
}

impl std::fmt::Debug for ProviderEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderEntry")
            .field("name", &self.name())
            .field("timeout", &self.timeout)
            .field("reports_changes", &self.reports_changes())
            .finish()
    }
}
