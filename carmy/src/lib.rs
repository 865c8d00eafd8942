//! Carmy: annotated async functions become agent tools with explicit side effects.
//!
//! See the repository README for the door, and `docs/` for the guide.

// The root holds what a tool author writes with; everything a host, a store or a transport
// implementor needs sits in a module named for what it is.
pub use carmy_core::{
    AgentError, BuildError, CancellationToken, Carmy, Completions, Content, Contents, Context,
    Effect, ErrorCategory, ExecutionId, Grant, Limits, Message, MessageContent, Messages, NoInput,
    Role, Runtime, State, ToolContent,
};
pub use carmy_macros::{prompt, resource, tool};

/// What a catalog is made of: the traits `#[tool]`, `#[resource]` and `#[prompt]` implement
/// (implement them by hand when a macro does not fit), their specs, and the entries a built
/// runtime lists.
pub mod catalog {
    pub use carmy_core::{
        BuildProblem, Catalog, CatalogChanges, Confirmation, Disabled, IntoContents, IntoMessages,
        Invocation, ListsChanged, MAX_TOOL_NAME_LEN, Prompt, PromptArgument, PromptEntry,
        PromptSpec, Requirements, Resource, ResourceEntry, ResourceSpec, SchemaProfile, Tool,
        ToolEntry, ToolInput, ToolOutput, ToolSpec,
    };
}

/// Asking the client from inside a tool: questions for the human ([`Ask::input`](ask::Ask)),
/// completions from its model ([`Ask::sample`](ask::Ask)), its roots, and the answers.
pub mod ask {
    pub use carmy_core::{
        Answers, Ask, AskKind, Asked, Asker, Asks, InputAction, InputAnswer, Pending, Root, Sampled,
    };
}

/// What runs and what it answers: the request every step sees, a call's outcome, the records
/// of executions, and the middleware around every request.
pub mod execution {
    pub use carmy_core::{
        Answer, Body, CallTool, Complete, CompletionRequest, CompletionTarget, ExecutionKind,
        ExecutionRecord, ExecutionStatus, GetPrompt, Incoming, MAX_COMPLETIONS, Middleware, Next,
        Operation, Outcome, OutcomeKind, PROGRESS_INTERVAL, ProgressReporter, ProgressSink,
        ReadResource, Request,
    };
}

/// The host's policy: who is calling (`Caller`), which tools, resources and prompts it may use,
/// which calls it confirms, when a call may start, and how often.
pub mod policy {
    pub use carmy_core::{
        Access, AccessError, Admission, AdmissionRequest, Approval, ApprovalRequest, Approver,
        Caller, Capacity, HostGrants, Permit, RateBuckets, RateLimit, Serialization,
    };
}

/// Resources beyond the ones `#[resource]` declares: providers of resources not known at build
/// time, their changes, URI templates, and (feature `fs`) a directory's files.
pub mod resources {
    pub use carmy_core::{
        ChangeSink, MAX_URI_LEN, ProvidedResource, ProviderEntry, ResourceChanges,
        ResourceProvider, ResourceWatch, TemplateError, UriTemplate, Watching,
    };
    /// A directory's files as resources (feature `fs`): [`Directory`], its limits and error
    /// codes.
    #[cfg(feature = "fs")]
    pub use carmy_core::{Directory, directory};
}

/// Where a runtime keeps what must outlive a call: request ids claimed once and their outcomes
/// (exactly once per request id), in memory or (feature `store`) in SQLite, PostgreSQL or
/// Redis.
pub mod store {
    pub use carmy_core::{
        Claim, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, LeaseTerms,
        MAX_REQUEST_ID_LEN, MemoryStore, MemoryStoreLimits, Quotas, Recorded, Release, StoreError,
        Waiter,
    };
    // Single-use tokens (a confirmation's request state), redeemed once across replicas.
    pub use carmy_core::{
        MAX_REDEEMED_PER_PRINCIPAL, MAX_REDEEMING_PRINCIPALS, MemoryRedemptionStore, Redemption,
        RedemptionKey, RedemptionStore, Redemptions,
    };
    #[cfg(feature = "redis")]
    pub use carmy_store::{Durability, RedisStore, RedisStoreOptions};
    #[cfg(feature = "postgres")]
    pub use carmy_store::{PostgresStore, PostgresStoreOptions};
    #[cfg(feature = "store")]
    pub use carmy_store::{SqliteStore, SqliteStoreOptions};
}

/// Tasks: executions that outlive their call, and where they are kept.
pub mod task {
    pub use carmy_core::{
        Created, MemoryTaskStore, MemoryTaskStoreLimits, NewTask, Responded, TaskEnding, TaskId,
        TaskKey, TaskLease, TaskProgress, TaskRecord, TaskReport, TaskSignals, TaskStatus,
        TaskStore, TaskSupport,
    };
}

/// The stable error codes of [`AgentError`]s.
pub use carmy_core::codes;
/// The application's records, committed with the outcome of the tools that write them.
pub use carmy_core::records;
/// Input schemas: how they are generated and checked for portability.
pub use carmy_core::schema;
/// Running tools in tests without a server.
pub use carmy_core::testing;

#[doc(hidden)]
pub use carmy_core::__private;

#[cfg(feature = "cli")]
pub mod cli;

/// The MCP adapter: `carmy::mcp::McpServer::new(runtime).serve_stdio().await`.
#[cfg(feature = "mcp")]
pub use carmy_mcp as mcp;

/// A tool input must implement `serde::Deserialize` (and `schemars::JsonSchema`); without it
/// the tool does not compile, with the error on the input's type:
///
/// ```compile_fail
/// use carmy::prelude::*;
///
/// #[derive(schemars::JsonSchema)]
/// struct SearchInput {
///     query: String,
/// }
///
/// #[tool(effect = "read")]
/// async fn search(input: SearchInput) -> Result<String, AgentError> {
///     Ok(input.query)
/// }
/// ```
#[cfg(doctest)]
pub struct ToolInputDoc;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The guide's examples (`docs/`, one hidden item per chapter), compiled and run as doctests.
#[cfg(doctest)]
pub mod guide_doctests {
    #[doc = include_str!("../../docs/01-tools.md")]
    pub struct Tools;
    #[doc = include_str!("../../docs/02-effects-and-guarantees.md")]
    pub struct EffectsAndGuarantees;
    #[doc = include_str!("../../docs/03-resources-and-prompts.md")]
    pub struct ResourcesAndPrompts;
    #[doc = include_str!("../../docs/04-serving.md")]
    pub struct Serving;
    #[doc = include_str!("../../docs/05-http-and-security.md")]
    pub struct HttpAndSecurity;
    #[doc = include_str!("../../docs/06-configuration.md")]
    pub struct Configuration;
    #[doc = include_str!("../../docs/07-stores-and-replicas.md")]
    pub struct StoresAndReplicas;
    #[doc = include_str!("../../docs/08-tasks.md")]
    pub struct Tasks;
    #[doc = include_str!("../../docs/09-performance.md")]
    pub struct Performance;
    #[doc = include_str!("../../docs/10-conformance-and-client.md")]
    pub struct ConformanceAndClient;
    #[doc = include_str!("../../docs/11-layout.md")]
    pub struct Layout;
}

/// The names a tool or resource module needs: `use carmy::prelude::*;`.
pub mod prelude {
    pub use carmy_core::{AgentError, Carmy, Context, Effect, NoInput, State};
    pub use carmy_macros::{prompt, resource, tool};
}
