//! Reads: a URI resolved to a resource, its variables checked against the resource's input,
//! admitted under the runtime's capacity, run under the guard, recorded. A URI the catalog's
//! resources do not match goes to the first provider that claims it, through the same steps;
//! providers' lists and changes are reached from here too.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{Instrument, field};

use super::{
    Begun, Ending, FromAnswer, Inner, ReadResource, Request, Runtime,
    guard::{Work, guarded},
};
use crate::{
    context::Context,
    error::AgentError,
    excerpt::excerpt,
    execution::{ExecutionId, ExecutionKind, ExecutionStatus},
    outcome::{Outcome, OutcomeKind},
    resource::{
        ChangeSink, Contents, ProvidedResource, ProviderEntry, ResourceChanges, ResourceWatch,
    },
};

/// How much of a URI a log line, a record or an error keeps.
pub(super) const MAX_URI_ECHO: usize = 256;

impl Runtime {
    /// Reads the resource `request` names: the fixed URI, or the first template that matches,
    /// or else the first [provider](crate::ResourceProvider) that claims it (recorded under the
    /// provider's name). A URI that names no resource is `RESOURCE_NOT_FOUND` with
    /// [`OutcomeKind::Unroutable`];
    /// variables that do not fit the resource's input are `INVALID_ARGUMENTS`. The read runs
    /// under its deadline and the request's cancellation, its panics caught, and is recorded
    /// like a call ([`Runtime::execution`]).
    ///
    /// ```
    /// use carmy_core::{
    ///     AgentError, Body, Carmy, Invocation, NoInput, Request, Resource, ResourceSpec,
    /// };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// struct Returns;
    /// impl Resource for Returns {
    ///     type Input = NoInput;
    ///     type Output = String;
    ///     const SPEC: ResourceSpec = ResourceSpec::new("returns", "shop://policies/returns")
    ///         .mime_type("text/markdown");
    ///     async fn read(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
    ///         Ok("# Returns\nWithin 30 days.".into())
    ///     }
    /// }
    /// let runtime = Carmy::new().resource(Returns).build()?;
    /// let outcome = runtime.read(Request::read("shop://policies/returns")).await;
    /// let contents = outcome.result?;
    /// assert_eq!(contents.iter().next().unwrap().body(), &Body::Text("# Returns\nWithin 30 days.".into()));
    /// let missing = runtime.read(Request::read("shop://policies/none")).await;
    /// assert_eq!(missing.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn read(&self, request: Request<ReadResource>) -> Outcome<Contents> {
        if self.inner.middleware.is_empty() {
            return self.read_served(request).await;
        }
        FromAnswer::from_answer(self.through(request.into()).await)
    }

    /// [`read`](Self::read), inside the middleware.
    pub(super) async fn read_served(&self, request: Request<ReadResource>) -> Outcome<Contents> {
        let execution_id = ExecutionId::generate();
        let span = tracing::info_span!(
            "carmy.read",
            uri = %excerpt(request.uri(), MAX_URI_ECHO),
            execution_id = %execution_id,
            status = field::Empty,
            duration_ms = field::Empty,
        );
        let Request {
            operation: ReadResource { uri },
            context,
            cancellation,
        } = request;
        let begun = Begun::now(execution_id, ExecutionKind::Read, uri);
        let ending = self
            .inner
            .read_steps(&begun, &context, &cancellation)
            .instrument(span.clone())
            .await
            .within(self.inner.limits.max_result_bytes, "resource");
        let duration = begun.started.elapsed();
        let outcome = self.inner.conclude(begun, ending, duration);
        span.record("status", outcome.status.as_str());
        span.record("duration_ms", duration.as_secs_f64() * 1e3);
        outcome
    }
}

impl Inner {
    async fn read_steps(
        &self,
        begun: &Begun,
        context: &Context,
        cancellation: &CancellationToken,
    ) -> Ending<'_, Contents> {
        // Refused before anything is resolved: whether it exists is none of this caller's
        // business.
        if !context.allows_resource(&begun.named) {
            return Ending {
                target: None,
                status: ExecutionStatus::Rejected,
                result: Err(AgentError::resource_not_allowed(&excerpt(
                    &begun.named,
                    MAX_URI_ECHO,
                ))),
                kind: OutcomeKind::Result,
                running: None,
            };
        }
        // Resolve.
        let Some((entry, bound)) = self.catalog.resolve_resource(&begun.named) else {
            if let Some(provider) = self.catalog.resolve_provider(&begun.named) {
                return self
                    .read_provided(provider, begun, context, cancellation)
                    .await;
            }
            return Ending {
                target: None,
                status: ExecutionStatus::Rejected,
                result: Err(AgentError::resource_not_found(&excerpt(
                    &begun.named,
                    MAX_URI_ECHO,
                ))),
                kind: OutcomeKind::Unroutable,
                running: None,
            };
        };
        let rejected =
            |error| Ending::stopped(Some(entry.name()), ExecutionStatus::Rejected, error);
        // Validate, and decode.
        let prepared = match entry
            .validate_variables(bound)
            .and_then(|variables| Arc::clone(&entry.resource).prepare(variables))
        {
            Ok(prepared) => prepared,
            Err(error) => return rejected(error),
        };
        self.run_admitted(
            Work {
                kind: ExecutionKind::Read,
                target: entry.name(),
                timeout: entry.timeout(),
                what: "resource",
            },
            begun,
            context,
            cancellation,
            None,
            prepared,
        )
        .await
    }
}

impl Inner {
    /// A read a provider answers: admitted, run under the guard and recorded like any other.
    /// The provider checks the URI itself (it claimed it cheaply; refusing is its read's job).
    async fn read_provided<'a>(
        &'a self,
        provider: &'a ProviderEntry,
        begun: &Begun,
        context: &Context,
        cancellation: &CancellationToken,
    ) -> Ending<'a, Contents> {
        self.run_admitted(
            Work {
                kind: ExecutionKind::Read,
                target: provider.name(),
                timeout: provider.timeout(),
                what: "resource provider",
            },
            begun,
            context,
            cancellation,
            None,
            |invocation| provider.provider.read(&begun.named, invocation),
        )
        .await
    }
}

impl Runtime {
    /// What every [provider](crate::ResourceProvider) serves now: their lists one after the
    /// other, in registration order. Each list is admitted under the runtime's capacity and
    /// runs under the provider's deadline and `cancellation`, its panics caught; the first
    /// failure fails the whole (a partial list would look complete). Not recorded: a list is no
    /// execution of anyone's code on anyone's behalf.
    pub async fn list_provided(
        &self,
        cancellation: &CancellationToken,
    ) -> Result<Vec<ProvidedResource>, AgentError> {
        let mut all = Vec::new();
        for provider in self.catalog().providers() {
            let _capacity = self.inner.capacity.try_admit()?;
            let (_, listed) = guarded(
                provider.provider.list(),
                provider.timeout(),
                cancellation,
                "resource provider",
            )
            .await;
            all.extend(listed?);
        }
        Ok(all)
    }

    /// Whether `uri` names a resource this runtime serves and the caller of `context` may read,
    /// found without reading it: one of the catalog's (a fixed URI, or one a template matches),
    /// or one a provider claims and its [`check`](crate::ResourceProvider::check) accepts, under
    /// the provider's deadline and `cancellation`, its panics caught. Otherwise the error a read
    /// would give: `RESOURCE_NOT_ALLOWED` for what the context's access rules leave out, not
    /// found for a URI nobody claims. Not recorded: nobody's code runs on anyone's behalf.
    pub async fn check_resource(
        &self,
        uri: &str,
        context: &Context,
        cancellation: &CancellationToken,
    ) -> Result<(), AgentError> {
        // Refused as a read is, before anything is resolved.
        if !context.allows_resource(uri) {
            return Err(AgentError::resource_not_allowed(&excerpt(
                uri,
                MAX_URI_ECHO,
            )));
        }
        let catalog = self.catalog();
        if catalog.resolve_resource(uri).is_some() {
            return Ok(());
        }
        let Some(provider) = catalog.resolve_provider(uri) else {
            return Err(AgentError::resource_not_found(&excerpt(uri, MAX_URI_ECHO)));
        };
        let _capacity = self.inner.capacity.try_admit()?;
        let (_, checked) = guarded(
            provider.provider.check(uri, context),
            provider.timeout(),
            cancellation,
            "resource provider",
        )
        .await;
        checked
    }

    /// Reports the providers' changes to `sink` until the returned [`ResourceWatch`] is
    /// dropped. The first watch starts every provider's own
    /// ([`ResourceProvider::watch`](crate::ResourceProvider::watch)); dropping the last stops
    /// them, so nothing watches when nobody listens. Fails when a provider cannot watch (the
    /// system's watch limit): nothing is watched then.
    pub fn watch_resources(&self, sink: Arc<dyn ChangeSink>) -> Result<ResourceWatch, AgentError> {
        self.catalog().watchers.register(sink)
    }

    /// Where the application reports changes of its own resources (a tool that edits what a
    /// resource shows, a background refresh) to every watcher, as providers do. Declare it
    /// with [`Carmy::reports_resource_changes`](crate::Carmy::reports_resource_changes), so
    /// that adapters offer subscriptions. Reports made while nobody watches are dropped.
    pub fn resource_changes(&self) -> ResourceChanges {
        self.catalog().watchers.changes()
    }

    /// How many sinks are watching the providers' changes now.
    pub fn resource_watches(&self) -> usize {
        self.catalog().watchers.watchers()
    }
}
