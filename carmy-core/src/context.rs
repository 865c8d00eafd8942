//! The context a tool runs in: the host's trusted facts about the caller ([`Caller`]) and,
//! inside a tool, the running execution (its id, cancellation, progress, questions, records).

use std::{fmt, sync::Arc};

use tokio_util::sync::CancellationToken;

use crate::{
    access::Access,
    ask::{Answers, Ask, AskKind, Asked, Asks, CallAsker, InputAnswer, Root, Sampled},
    caller::Caller,
    error::AgentError,
    execution::ExecutionId,
    grant::Grant,
    progress::ProgressReporter,
    records::Records,
    reported::Reported,
    resource_change::ResourceChange,
    suspension::{AskRoute, Suspension},
};

/// What the host knows and trusts about a call (its [`Caller`]: the principal, the grants it
/// holds and any typed extensions) and, inside a tool, the execution: its id, its cancellation,
/// a way to report progress, to ask the caller's host, and the application's records. Tool
/// arguments and protocol metadata can never add to the caller; only the host builds one.
///
/// ```
/// use carmy_core::Context;
///
/// let ctx = Context::new()
///     .with_principal("alice@example.com")
///     .with_grant("confirm:cancel_order");
/// assert!(ctx.can_confirm("cancel_order"));
/// assert!(!ctx.can_confirm("delete_everything"));
/// ```
#[derive(Clone, Default)]
pub struct Context {
    caller: Arc<Caller>,
    execution: Option<ExecutionScope>,
}

#[derive(Clone)]
struct ExecutionScope {
    id: ExecutionId,
    cancellation: CancellationToken,
    progress: ProgressReporter,
    asking: Option<Asking>,
    records: Records,
    /// Where the changes it reports wait for the call to succeed; `None` when the runtime does
    /// not report changes of its own resources.
    reported: Option<Arc<Reported>>,
}

/// Who answers the execution's questions, and where it stops to wait for answers that come on
/// the caller's next try.
#[derive(Clone)]
pub(crate) struct Asking {
    pub(crate) asker: CallAsker,
    pub(crate) suspension: Arc<Suspension>,
    /// Set when the call may become a task: once it did, its questions go to the task.
    pub(crate) task: Option<Arc<dyn AskRoute>>,
}

impl From<Caller> for Context {
    fn from(caller: Caller) -> Self {
        Self {
            caller: Arc::new(caller),
            execution: None,
        }
    }
}

impl Context {
    /// An anonymous context with no grants.
    pub fn new() -> Self {
        Self::default()
    }

    /// The host's trusted facts about the caller.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The caller, changed by `change` (copied first if another context shares it).
    fn with_caller(mut self, change: impl FnOnce(Caller) -> Caller) -> Self {
        let caller = Arc::make_mut(&mut self.caller);
        *caller = change(std::mem::take(caller));
        self
    }

    /// Names the caller ([`Caller::with_principal`]).
    #[must_use]
    pub fn with_principal(self, principal: impl Into<Arc<str>>) -> Self {
        self.with_caller(|caller| caller.with_principal(principal))
    }

    /// Adds a grant ([`Caller::with_grant`]).
    #[must_use]
    pub fn with_grant(self, grant: impl Into<Grant>) -> Self {
        self.with_caller(|caller| caller.with_grant(grant))
    }

    /// Adds grants ([`Caller::with_grants`]).
    #[must_use]
    pub fn with_grants<I, G>(self, grants: I) -> Self
    where
        I: IntoIterator<Item = G>,
        G: Into<Grant>,
    {
        self.with_caller(|caller| caller.with_grants(grants))
    }

    /// Restricts what the caller may see and use ([`Caller::with_access`]).
    #[must_use]
    pub fn with_access(self, access: Access) -> Self {
        self.with_caller(|caller| caller.with_access(access))
    }

    /// Attaches a typed value ([`Caller::with_extension`]).
    #[must_use]
    pub fn with_extension<T: Send + Sync + 'static>(self, value: T) -> Self {
        self.with_caller(|caller| caller.with_extension(value))
    }

    /// Whether the caller may see and read the resource at `uri` ([`Caller::allows_resource`]).
    pub fn allows_resource(&self, uri: &str) -> bool {
        self.caller.allows_resource(uri)
    }

    /// Whether the caller may see and get the prompt named `name` ([`Caller::allows_prompt`]).
    pub fn allows_prompt(&self, name: &str) -> bool {
        self.caller.allows_prompt(name)
    }

    /// Whether any [`Access`] restriction applies ([`Caller::is_restricted`]).
    pub fn is_restricted(&self) -> bool {
        self.caller.is_restricted()
    }

    /// Whether a restriction holds the caller to some tools ([`Caller::restricts_tools`]).
    pub fn restricts_tools(&self) -> bool {
        self.caller.restricts_tools()
    }

    /// Whether a restriction holds the caller to some resources
    /// ([`Caller::restricts_resources`]).
    pub fn restricts_resources(&self) -> bool {
        self.caller.restricts_resources()
    }

    /// Whether a restriction holds the caller to some prompts ([`Caller::restricts_prompts`]).
    pub fn restricts_prompts(&self) -> bool {
        self.caller.restricts_prompts()
    }

    /// The caller, if the host named one ([`Caller::principal`]).
    pub fn principal(&self) -> Option<&str> {
        self.caller.principal()
    }

    /// Whether the host granted exactly `grant` ([`Caller::has_grant`]).
    pub fn has_grant(&self, grant: &str) -> bool {
        self.caller.has_grant(grant)
    }

    /// Whether the host allowed `tool` to run without further confirmation
    /// ([`Caller::can_confirm`]).
    pub fn can_confirm(&self, tool: &str) -> bool {
        self.caller.can_confirm(tool)
    }

    /// Every grant, sorted.
    pub fn grants(&self) -> impl Iterator<Item = &Grant> {
        self.caller.grants()
    }

    /// The extension of type `T`, if the host attached one ([`Caller::extension`]).
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.caller.extension()
    }

    /// The id of the running execution; `None` outside a tool.
    pub fn execution_id(&self) -> Option<&ExecutionId> {
        self.execution.as_ref().map(|scope| &scope.id)
    }

    /// True once the execution was cancelled or passed its deadline. Long tools check it between
    /// steps, or await [`Context::cancelled`].
    pub fn is_cancelled(&self) -> bool {
        self.execution
            .as_ref()
            .is_some_and(|scope| scope.cancellation.is_cancelled())
    }

    /// Completes when the execution is cancelled or passes its deadline; never, outside a tool.
    ///
    /// The runtime also drops the tool's future at that moment, so awaiting this is only needed
    /// to clean up or to stop blocking work the tool started.
    pub async fn cancelled(&self) {
        match &self.execution {
            Some(scope) => scope.cancellation.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// The token cancelled with the execution, to hand to blocking work or spawned tasks.
    pub fn cancellation_token(&self) -> CancellationToken {
        match &self.execution {
            Some(scope) => scope.cancellation.clone(),
            None => CancellationToken::new(),
        }
    }

    /// Reports progress: `done` of `total` (if known), with an optional message. Adapters send it
    /// to the client when the client asked for progress, throttled; otherwise it costs nothing.
    pub fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(scope) = &self.execution {
            scope.progress.report(done, total, message);
        }
    }

    /// Whether the caller's host can answer questions of `kind` ([`Context::ask`]): a tool
    /// asks only what it can, or does without.
    pub fn can_ask(&self, kind: AskKind) -> bool {
        self.asking()
            .is_some_and(|asking| asking.asker.0.can_ask(kind))
    }

    /// Asks the caller's host `asks`, together, and returns the answers. Over a protocol that
    /// answers on the caller's next try, the execution ends here, waiting for input, and the
    /// tool runs again from the start with the answers: ask before having effects (see
    /// [`Asker`](crate::Asker)). Fails with `CANNOT_ASK` when the host cannot answer one of
    /// them.
    ///
    /// ```no_run
    /// # async fn demo(ctx: &carmy_core::Context) -> Result<(), carmy_core::AgentError> {
    /// use carmy_core::{Ask, Asks};
    /// use serde_json::json;
    ///
    /// let form = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
    /// let answers = ctx
    ///     .ask(Asks::new()
    ///         .with("name", Ask::input("What is your name?", form))
    ///         .with("greeting", Ask::sample("Write a one-line greeting", 50)))
    ///     .await?;
    /// let name = answers.input("name")?.content;
    /// let greeting = answers.sample("greeting")?;
    /// # Ok(()) }
    /// ```
    pub async fn ask(&self, asks: Asks) -> Result<Answers, AgentError> {
        let Some(asking) = self.asking() else {
            let kind = asks
                .iter()
                .next()
                .map_or("input", |(_, ask)| ask.kind().as_str());
            return Err(AgentError::cannot_ask(kind));
        };
        if let Some((_, ask)) = asks
            .iter()
            .find(|(_, ask)| !asking.asker.0.can_ask(ask.kind()))
        {
            return Err(AgentError::cannot_ask(ask.kind().as_str()));
        }
        // A task's questions wait in its store until its owner answers them, on any replica.
        let asks = match &asking.task {
            Some(route) => match route.ask_task(asks) {
                Ok(answers) => return answers.await,
                Err(asks) => asks,
            },
            None => asks,
        };
        match asking.asker.0.ask_boxed(&asks).await {
            Asked::Answered(answers) => Ok(answers),
            Asked::Refused(error) => Err(error),
            Asked::Later(pending) => {
                // The runtime ends the execution now; this future is dropped, never resumed.
                asking.suspension.suspend(pending);
                std::future::pending().await
            }
        }
    }

    /// Puts a form to the human ([`Ask::input`]) under `key`.
    pub async fn ask_input(
        &self,
        key: &str,
        message: impl Into<String>,
        schema: serde_json::Value,
    ) -> Result<InputAnswer, AgentError> {
        let answers = self
            .ask(Asks::new().with(key, Ask::input(message, schema)))
            .await?;
        answers.input(key)
    }

    /// Asks the host's model ([`Ask::Sample`]) under `key`.
    pub async fn sample(&self, key: &str, ask: Ask) -> Result<Sampled, AgentError> {
        let answers = self.ask(Asks::new().with(key, ask)).await?;
        answers.sample(key)
    }

    /// Asks for the roots the user shared ([`Ask::Roots`]) under `key`.
    pub async fn roots(&self, key: &str) -> Result<Vec<Root>, AgentError> {
        let answers = self.ask(Asks::new().with(key, Ask::Roots)).await?;
        answers.roots(key)
    }

    /// The application's records ([`Records`]): read-only, except in a tool declared
    /// `transactional`, whose writes commit with its outcome. Outside an execution, or on a
    /// runtime whose store keeps none, every use fails with `RECORDS_UNAVAILABLE`.
    pub fn records(&self) -> &Records {
        static NONE: Records = Records::none();
        self.execution
            .as_ref()
            .map_or(&NONE, |scope| &scope.records)
    }

    /// Tells the subscribers of the resource at `uri` that it changed
    /// (`notifications/resources/updated`), on every replica sharing the runtime's
    /// [`ChangeFeed`](crate::ChangeFeed), once this call succeeds: a transactional tool's after
    /// its writes commit, so a subscriber that reads at once sees them. Nothing is told when the
    /// call fails. The runtime must declare
    /// [`reports_resource_changes`](crate::Carmy::reports_resource_changes) (so that clients are
    /// offered subscriptions); without it, and outside a tool, this does nothing.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        self.report(ResourceChange::Updated(uri.into()));
    }

    /// Tells clients that resources appeared or disappeared
    /// (`notifications/resources/list_changed`), as [`resource_updated`](Self::resource_updated)
    /// tells a change.
    pub fn resources_list_changed(&self) {
        self.report(ResourceChange::ListChanged);
    }

    fn report(&self, change: ResourceChange) {
        match self
            .execution
            .as_ref()
            .and_then(|scope| scope.reported.as_ref())
        {
            Some(reported) => reported.push(change),
            None => tracing::debug!(
                ?change,
                "a change reported where the runtime reports none (Carmy::reports_resource_changes)"
            ),
        }
    }

    fn asking(&self) -> Option<&Asking> {
        self.execution.as_ref()?.asking.as_ref()
    }

    pub(crate) fn for_execution(
        &self,
        id: ExecutionId,
        cancellation: CancellationToken,
        progress: ProgressReporter,
        asking: Option<Asking>,
        records: Records,
        reported: Option<Arc<Reported>>,
    ) -> Self {
        Self {
            caller: Arc::clone(&self.caller),
            execution: Some(ExecutionScope {
                id,
                cancellation,
                progress,
                asking,
                records,
                reported,
            }),
        }
    }
}

impl fmt::Debug for Context {
    // The caller shows its extensions' count only: they are opaque and may hold secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("caller", &self.caller)
            .field("execution_id", &self.execution_id())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_does_not_affect_clones() {
        let base = Context::new().with_principal("a");
        let other = base.clone().with_grant("confirm:x");
        assert!(!base.can_confirm("x"));
        assert!(other.can_confirm("x"));
        assert_eq!(other.principal(), Some("a"));
    }

    #[test]
    fn the_caller_is_read_through_the_context() {
        let ctx = Context::from(Caller::new().with_principal("a")).with_extension(7_u32);
        assert_eq!(ctx.principal(), Some("a"));
        assert_eq!(ctx.extension::<u32>(), Some(&7));
        assert_eq!(ctx.caller().principal(), Some("a"));
    }
}
