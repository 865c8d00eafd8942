//! Carmy: annotated async functions become agent tools with explicit side effects.
//!
//! See the repository README for the door, and `docs/` for the guide.

pub use carmy_core::{
    Access, AccessError, Admission, AdmissionRequest, AgentError, Answers, Approval,
    ApprovalRequest, Approver, Ask, AskKind, Asked, Asker, Asks, Body, BuildError, BuildProblem,
    CancellationToken, Carmy, Catalog, Claim, CompleteRequest, CompletionRequest, CompletionTarget,
    Completions, Confirmation, Content, ContentBlock, Contents, Context, Effect, ErrorCategory,
    ExecutionId, ExecutionKind, ExecutionRecord, ExecutionStatus, Fingerprint, Grant, HostGrants,
    IdempotencyKey, IdempotencyStore, InputAction, InputAnswer, IntoContents, IntoMessages,
    Invocation, Lease, LeaseTerms, Limits, MAX_COMPLETIONS, MemoryStore, MemoryStoreLimits,
    Message, MessageContent, Messages, NoInput, Outcome, OutcomeKind, PROGRESS_INTERVAL, Pending,
    Permit, Prompt, PromptArgument, PromptEntry, PromptSpec, Question, RateBuckets, RateLimit,
    ReadRequest, RecordStore, Recorded, Records, Release, RenderRequest, Request, Resource,
    ResourceEntry, ResourceSpec, Role, Root, Runtime, Sampled, SchemaProfile, State, StoreError,
    Tool, ToolContent, ToolEntry, ToolInput, ToolOutput, ToolSpec, UriTemplate, codes, schema,
    testing,
};
// Tasks: executions that outlive their call, and where they are kept.
pub use carmy_core::{
    Created, MemoryTaskStore, MemoryTaskStoreLimits, NewTask, Responded, TaskEnding, TaskId,
    TaskKey, TaskLease, TaskProgress, TaskRecord, TaskReport, TaskSignals, TaskStatus, TaskStore,
    TaskSupport,
};
// Resources not known at build time, and their changes.
/// The application's records, committed with the outcome of the tools that write them.
pub use carmy_core::records;
pub use carmy_core::{
    ChangeSink, ProvidedResource, ProviderEntry, ResourceChanges, ResourceProvider, ResourceWatch,
    Watching,
};
pub use carmy_macros::{prompt, resource, tool};

/// A directory's files as resources (feature `fs`): [`Directory`], its limits and error codes.
#[cfg(feature = "fs")]
pub use carmy_core::{Directory, directory};

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
