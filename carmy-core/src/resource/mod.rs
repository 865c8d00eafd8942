//! Resources: what a server lets a client read, by URI. A resource has a fixed URI
//! (`shop://policies/returns`) or a URI template (`shop://products/{id}`) whose variables bind
//! to the fields of its input, and reads return text or bytes ([`Contents`]).
//!
//! Reads go through the runtime as tool calls do ([`Runtime::read`](crate::Runtime::read)):
//! resolved by URI, their variables checked against the input's schema, admitted under the same
//! capacity, run under a deadline and the request's cancellation with panics contained, and
//! recorded with an execution id and a status.
//!
//! Resources not known when the runtime is built come from a [`ResourceProvider`] (the files of
//! a directory: `Directory`, feature `fs`), asked after the catalog's own resources; providers
//! report changes through [`ResourceChanges`] to whoever watches ([`ChangeSink`]).

#[cfg(feature = "fs")]
pub mod directory;
mod entry;
mod erased;
pub(crate) mod provider;
pub(crate) mod register;
pub(crate) mod watch;

use std::{future::Future, time::Duration};

pub use crate::contents::{Body, Content, Contents, IntoContents};
pub use crate::resource_change::ResourceChange;
pub use crate::uri_template::{TemplateError, UriTemplate};
#[cfg(feature = "fs")]
pub use directory::Directory;
pub use entry::ResourceEntry;
pub use provider::{ProvidedResource, ProviderEntry, ResourceProvider};
pub use watch::{ChangeFeed, ChangeSink, ResourceChanges, ResourceWatch, Watching};

use crate::{
    completion::{CompletionRequest, Completions},
    error::AgentError,
    state::Requirements,
    tool::{Invocation, ToolInput},
};

/// The longest URI a read may name, in bytes; a longer one names no resource.
pub const MAX_URI_LEN: usize = 8 * 1024;

/// A resource: static metadata, the input its URI's variables decode into, and an async read.
///
/// ```
/// use carmy_core::{AgentError, Carmy, Content, Invocation, Resource, ResourceSpec};
/// # use schemars::JsonSchema;
/// # use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct ProductRef {
///     /// The product's id.
///     id: String,
/// }
///
/// struct Product;
///
/// impl Resource for Product {
///     type Input = ProductRef;
///     type Output = Content;
///     const SPEC: ResourceSpec = ResourceSpec::new("product", "shop://products/{id}")
///         .description("One product, as JSON.")
///         .mime_type("application/json");
///
///     async fn read(&self, input: ProductRef, _: Invocation) -> Result<Content, AgentError> {
///         Content::json(&serde_json::json!({ "id": input.id, "name": "Mouse" }))
///     }
/// }
///
/// let runtime = Carmy::new().resource(Product).build().unwrap();
/// assert_eq!(runtime.catalog().resources().count(), 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Carmy resource",
    label = "not a resource",
    note = "annotate an `async fn` with `#[carmy::resource(uri = \"...\")]` and pass the function's name, or implement `Resource` by hand: an input for the URI's variables (`NoInput` for a fixed URI), an output (`String`, `Vec<u8>`, `Content`, `Contents`), a `ResourceSpec` and `async fn read`"
)]
pub trait Resource: Send + Sync + 'static {
    /// The URI's variables, decoded from a JSON object of strings after validation against
    /// this type's schema; [`NoInput`](crate::NoInput) for a fixed URI.
    type Input: ToolInput;
    /// What a read returns.
    type Output: IntoContents;
    /// Name, URI (or template), description, MIME type.
    const SPEC: ResourceSpec;

    /// Declares the `State<T>` values the resource needs, so `build()` can check they exist.
    fn requirements(requirements: &mut Requirements) {
        let _ = requirements;
    }

    /// The variables whose values [`complete`](Self::complete) can suggest (none by default).
    const COMPLETES: &'static [&'static str] = &[];

    /// Suggests values for one of [`COMPLETES`](Self::COMPLETES) as the user types it.
    fn complete(
        &self,
        request: CompletionRequest<'_>,
    ) -> impl Future<Output = Result<Completions, AgentError>> + Send {
        let _ = request;
        std::future::ready(Ok(Completions::none()))
    }

    /// Reads the resource. The runtime has matched the URI and checked its variables, and
    /// enforces the deadline and cancellation by dropping this future.
    fn read(
        &self,
        input: Self::Input,
        invocation: Invocation,
    ) -> impl Future<Output = Result<Self::Output, AgentError>> + Send;
}

/// A resource's static metadata. Built in a `const`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceSpec {
    name: &'static str,
    uri: &'static str,
    title: Option<&'static str>,
    description: &'static str,
    mime_type: Option<&'static str>,
    timeout: Option<Duration>,
    fresh_for: Duration,
}

impl ResourceSpec {
    /// A resource named `name` at `uri`: a fixed URI, or a template with `{variables}`.
    pub const fn new(name: &'static str, uri: &'static str) -> Self {
        Self {
            name,
            uri,
            title: None,
            description: "",
            mime_type: None,
            timeout: None,
            fresh_for: Duration::ZERO,
        }
    }

    /// How long a client may keep what it read before reading again (none by default: every
    /// read is fresh). Clients that cache (MCP 2026-07-28's `ttlMs`) keep it for the principal
    /// that read it only.
    pub const fn fresh_for(mut self, ttl: Duration) -> Self {
        self.fresh_for = ttl;
        self
    }

    /// A human-friendly display name.
    pub const fn title(mut self, title: &'static str) -> Self {
        self.title = Some(title);
        self
    }

    /// What the resource holds, for the model.
    pub const fn description(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// The MIME type of its contents (each content may say otherwise).
    pub const fn mime_type(mut self, mime_type: &'static str) -> Self {
        self.mime_type = Some(mime_type);
        self
    }

    /// The read's own deadline, replacing the runtime's default.
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The name, unique among the catalog's resources.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The URI or URI template, as written.
    pub const fn uri(&self) -> &'static str {
        self.uri
    }

    /// The display name, if any.
    pub const fn title_text(&self) -> Option<&'static str> {
        self.title
    }

    /// The description.
    pub const fn description_text(&self) -> &'static str {
        self.description
    }

    /// The MIME type, if declared.
    pub const fn mime_type_of(&self) -> Option<&'static str> {
        self.mime_type
    }

    /// The read's own deadline, if it set one.
    pub const fn timeout_override(&self) -> Option<Duration> {
        self.timeout
    }

    /// How long what it read may be kept.
    pub const fn freshness(&self) -> Duration {
        self.fresh_for
    }
}
