//! `Carmy`: register tools and shared state, then `build()` a validated runtime. What is
//! registered and configured is here; checking it all and building the runtime is in `build`.

mod build;

use std::{any::TypeId, fmt, sync::Arc};

use serde_json::Value;

use crate::{
    access::Access,
    admission::{Admission, DynAdmission},
    content::ToolContent,
    erased::{Erased, ErasedTool},
    idempotency::{DynStore, IdempotencyStore},
    limits::Limits,
    prompt::{Prompt, register::RegisteredPrompt},
    rate_limit::RateLimit,
    rate_limit_store::{DynRateLimitStore, RateLimitStore},
    records::{DynRecordStore, RecordStore},
    redemption::{DynRedemptionStore, RedemptionStore},
    resource::{
        ChangeFeed, Resource, ResourceProvider, provider::ErasedProvider,
        register::RegisteredResource,
    },
    runtime::{DynMiddleware, Middleware},
    schema::{Direction, SchemaProfile, schema_for},
    state::{Requirements, StateMap},
    task::{DynTaskStore, TaskStore},
    tool::{Tool, ToolSpec},
};

/// Builds a [`Runtime`](crate::Runtime): tools in a deterministic order, shared state, limits,
/// the idempotency store. Every problem is found by [`build`](Carmy::build), before the first
/// call.
///
/// ```
/// use carmy_core::{AgentError, Carmy, Effect, Invocation, NoInput, Tool, ToolSpec};
///
/// struct Ping;
/// impl Tool for Ping {
///     type Input = NoInput;
///     type Output = ();
///     const SPEC: ToolSpec = ToolSpec::new("ping", Effect::None);
///     async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> { Ok(()) }
/// }
///
/// let err = Carmy::new().tool(Ping).tool(Ping).build().unwrap_err();
/// assert_eq!(err.to_string(), "cannot build the catalog: two tools are named `ping`");
/// ```
#[must_use]
pub struct Carmy {
    tools: Vec<Registered>,
    resources: Vec<RegisteredResource>,
    providers: Vec<Arc<dyn ErasedProvider>>,
    prompts: Vec<RegisteredPrompt>,
    states: StateMap,
    store: Option<Arc<dyn DynStore>>,
    /// The store's records, when it keeps them: `None` with a store that does not.
    records: Option<Arc<dyn DynRecordStore>>,
    task_store: Option<Arc<dyn DynTaskStore>>,
    redemption_store: Option<Arc<dyn DynRedemptionStore>>,
    /// Where rate-limited tools keep their buckets (`None`: in the process).
    rate_limit_store: Option<Arc<dyn DynRateLimitStore>>,
    admissions: Vec<Arc<dyn DynAdmission>>,
    middleware: Vec<Arc<dyn DynMiddleware>>,
    rate_limit: RateLimit,
    /// Tools confirmed before they run whatever they declare (`require_confirmation`).
    confirmed: Vec<Access>,
    limits: Limits,
    profile: SchemaProfile,
    reports_resource_changes: bool,
    change_feed: Option<Arc<dyn ChangeFeed>>,
}

struct Registered {
    spec: ToolSpec,
    requirements: Requirements,
    tool: Arc<dyn ErasedTool>,
    /// The input's Rust type, for an error about its schema.
    input_type: &'static str,
    schemas: fn(SchemaProfile) -> (Value, Value),
    /// The tool returns [`ToolContent`] rather than JSON data.
    returns_content: bool,
}

fn schemas_of<T: Tool>(profile: SchemaProfile) -> (Value, Value) {
    (
        schema_for::<T::Input>(profile, Direction::Input),
        schema_for::<T::Output>(profile, Direction::Output),
    )
}

impl Carmy {
    /// An empty builder.
    pub fn new() -> Self {
        Self {
            tools: Vec::new(),
            resources: Vec::new(),
            providers: Vec::new(),
            prompts: Vec::new(),
            states: StateMap::default(),
            store: None,
            records: None,
            task_store: None,
            redemption_store: None,
            rate_limit_store: None,
            admissions: Vec::new(),
            middleware: Vec::new(),
            rate_limit: RateLimit::unlimited(),
            confirmed: Vec::new(),
            limits: Limits::default(),
            profile: SchemaProfile::default(),
            reports_resource_changes: false,
            change_feed: None,
        }
    }

    /// Says the application reports changes of its own resources, through
    /// [`Runtime::resource_changes`](crate::Runtime::resource_changes): adapters then offer
    /// subscriptions (resource providers that watch, such as a `Directory`, say so themselves).
    pub fn reports_resource_changes(mut self) -> Self {
        self.reports_resource_changes = true;
        self
    }

    /// Tells the application's changes to the replicas sharing `feed`, and theirs to this
    /// runtime's watchers (one of `carmy-store`'s PostgreSQL or Redis stores). Without one,
    /// changes stay in the process. See [`ChangeFeed`].
    pub fn change_feed(mut self, feed: impl ChangeFeed) -> Self {
        self.change_feed = Some(Arc::new(feed));
        self
    }

    /// Registers a tool: the name of a `#[tool]` function, or a hand-written [`Tool`]. Its
    /// input's schema must be an object's, as MCP passes arguments as one JSON object:
    /// [`build`](Self::build) refuses any other.
    pub fn tool<T: Tool>(mut self, tool: T) -> Self {
        let mut requirements = Requirements::default();
        T::requirements(&mut requirements);
        self.tools.push(Registered {
            spec: T::SPEC,
            requirements,
            tool: Arc::new(Erased(tool)),
            input_type: std::any::type_name::<T::Input>(),
            schemas: schemas_of::<T>,
            returns_content: TypeId::of::<T::Output>() == TypeId::of::<ToolContent>(),
        });
        self
    }

    /// Registers a resource: a hand-written [`Resource`]. Reads go through the runtime like
    /// calls do ([`Runtime::read`](crate::Runtime::read)).
    pub fn resource<R: Resource>(mut self, resource: R) -> Self {
        self.resources.push(RegisteredResource::new(resource));
        self
    }

    /// Registers a resource provider: resources not known until asked (the files of a
    /// directory). Its URIs are asked of it after the catalog's own resources, and of the
    /// providers in the order registered; reads go through the runtime like calls do.
    pub fn resource_provider<P: ResourceProvider>(mut self, provider: P) -> Self {
        self.providers.push(Arc::new(provider));
        self
    }

    /// Registers a prompt: a hand-written [`Prompt`]. Renders go through the runtime like calls
    /// do ([`Runtime::get_prompt`](crate::Runtime::get_prompt)).
    pub fn prompt<P: Prompt>(mut self, prompt: P) -> Self {
        self.prompts.push(RegisteredPrompt::new(prompt));
        self
    }

    /// Registers a shared value, handed to tools that take `State<T>`. One value per type; a
    /// later registration of the same type replaces the earlier one.
    pub fn state<T: Send + Sync + 'static>(self, value: T) -> Self {
        self.state_arc(Arc::new(value))
    }

    /// Registers a shared value that is already in an `Arc`.
    pub fn state_arc<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.states.insert(value);
        self
    }

    /// Replaces the in-memory store with one that keeps both the execution records
    /// (idempotency) and the application's [`Records`](crate::Records): one of `carmy-store`'s
    /// (SQLite, PostgreSQL, Redis), or another [`RecordStore`]. Transactional tools commit
    /// their writes and their outcome in it together.
    pub fn store(mut self, store: impl RecordStore) -> Self {
        let store = Arc::new(store);
        self.records = Some(Arc::clone(&store) as Arc<dyn DynRecordStore>);
        self.store = Some(store);
        self
    }

    /// Replaces the in-memory idempotency store with one that keeps no records (see
    /// [`store`](Self::store) for one that does). Tools then find no records, and a
    /// `transactional` tool is refused by `build()`.
    pub fn idempotency_store(mut self, store: impl IdempotencyStore) -> Self {
        self.store = Some(Arc::new(store));
        self.records = None;
        self
    }

    /// Replaces the in-memory task store (e.g. with one shared by replicas). Every runtime
    /// that shares it can read, answer and cancel the tasks of the others. See [`TaskStore`].
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// Replaces the in-memory redemption store (e.g. with one shared by replicas), where
    /// single-use tokens are remembered once redeemed ([`Runtime::redemptions`]). Every runtime
    /// that shares it redeems a token once between them. See [`RedemptionStore`].
    ///
    /// [`Runtime::redemptions`]: crate::Runtime::redemptions
    pub fn redemption_store(mut self, store: impl RedemptionStore) -> Self {
        self.redemption_store = Some(Arc::new(store));
        self
    }

    /// How often one principal may call each tool that sets no limit of its own (default:
    /// unlimited). A call over it is refused before it runs with `RATE_LIMITED` (retryable;
    /// `details.retry_after_ms` says when).
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = limit;
        self
    }

    /// Keeps the buckets of rate-limited tools in `store` (e.g. one shared by replicas) rather
    /// than in the process: every runtime that shares it shares each tool's limit, whichever of
    /// them a call reaches. When the store cannot answer, a call is checked against this
    /// process's own bucket instead. See [`RateLimitStore`].
    pub fn rate_limit_store(mut self, store: impl RateLimitStore) -> Self {
        self.rate_limit_store = Some(Arc::new(store));
        self
    }

    /// Requires confirmation of the tools `rules` match (names, patterns, effects: see
    /// [`Access`]), as if each were declared `confirm`: a call runs only with the
    /// host's `confirm:<tool>` grant or the client's approval. Tools it does not match keep what
    /// they declare; it never lifts a tool's own requirement.
    pub fn require_confirmation(mut self, rules: Access) -> Self {
        self.confirmed.push(rules);
        self
    }

    /// Adds an admission policy (a rate limit, a quota), asked for every call after the
    /// built-in ones (capacity, then the tool's turn), in the order added. See [`Admission`].
    pub fn admission(mut self, admission: impl Admission) -> Self {
        self.admissions.push(Arc::new(admission));
        self
    }

    /// Adds a [`Middleware`], which sees every request (tool calls, resource reads, prompt gets,
    /// completions) and its answer, around the runtime's own steps. The first added is the
    /// outermost.
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// Replaces the default [`Limits`].
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Replaces the deadline of tools that set no `timeout` of their own, keeping the other
    /// limits ([`Limits::default_timeout`]).
    pub fn default_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.limits.default_timeout = timeout;
        self
    }

    /// Replaces the bound on a result's size, keeping the other limits
    /// ([`Limits::max_result_bytes`]).
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_result_bytes = bytes;
        self
    }

    /// Chooses how schemas are published and validated (default: [`SchemaProfile::Portable`]).
    pub fn schema_profile(mut self, profile: SchemaProfile) -> Self {
        self.profile = profile;
        self
    }
}

impl Default for Carmy {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Carmy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Carmy")
            .field(
                "tools",
                &self.tools.iter().map(|t| t.spec.name()).collect::<Vec<_>>(),
            )
            .field("admissions", &self.admissions.len())
            .field("middleware", &self.middleware.len())
            .field("limits", &self.limits)
            .field("profile", &self.profile)
            .finish_non_exhaustive()
    }
}
