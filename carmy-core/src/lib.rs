//! # carmy-core
//!
//! The catalog and the execution runtime of [Carmy](https://docs.rs/carmy): tools with explicit
//! side effects, argument validation against the published schema, confirmation from the host,
//! idempotency by request id, parallel safety, deadlines, cancellation and execution records.
//! It knows nothing of MCP; adapters such as `carmy-mcp` project it onto a protocol.
//!
//! Every call goes through one pipeline ([`Runtime::execute`]): resolve, validate, approve,
//! claim, admit, run, settle. Its seams are traits: [`Approver`] (may this call run?),
//! [`Admission`] (may it start now?), [`IdempotencyStore`] (where claims and outcomes live) and
//! [`TaskStore`] (where the executions that outlive their call, tasks, are kept, for every
//! replica to read, answer and cancel).
//!
//! Most users depend on the `carmy` facade and write tools with `#[carmy::tool]`. This crate is
//! what the macro expands to and what an adapter drives:
//!
//! ```
//! use carmy_core::{AgentError, Carmy, Effect, Invocation, NoInput, Tool, ToolSpec};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! struct Hello;
//! impl Tool for Hello {
//!     type Input = NoInput;
//!     type Output = String;
//!     const SPEC: ToolSpec = ToolSpec::new("hello", Effect::None).description("Say hello.");
//!     async fn run(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
//!         Ok("hello".into())
//!     }
//! }
//!
//! let runtime = Carmy::new().tool(Hello).build()?;
//! let outcome = runtime.call("hello", serde_json::json!({})).await;
//! assert_eq!(outcome.result?, "hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod access;
mod admission;
mod approval;
mod ask;
mod build_problem;
mod builder;
mod caller;
mod catalog;
mod completion;
mod content;
mod contents;
mod context;
mod disabled;
mod effect;
mod erased;
mod error;
mod excerpt;
mod execution;
mod grant;
mod history;
mod idempotency;
mod limits;
mod memory_store;
mod message;
mod outcome;
mod percent;
mod progress;
mod prompt;
mod quotas;
mod rate_buckets;
mod rate_limit;
mod rate_limit_store;
pub mod records;
mod redemption;
mod reported;
mod resource;
mod resource_change;
mod runtime;
pub mod schema;
mod state;
mod suspension;
mod sync;
mod task;
pub mod testing;
mod tool;
mod uri_template;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use access::{Access, AccessError};
pub use admission::{Admission, AdmissionRequest, Capacity, Permit, Serialization};
pub use approval::{Approval, ApprovalRequest, Approver, HostGrants};
pub use ask::{
    Answers, Ask, AskKind, Asked, Asker, Asks, InputAction, InputAnswer, Pending, Root, Sampled,
};
pub use build_problem::{BuildError, BuildProblem};
pub use builder::Carmy;
pub use caller::Caller;
pub use catalog::{Catalog, CatalogChanges, ListsChanged, MAX_TOOL_NAME_LEN, ToolEntry};
pub use completion::{CompletionRequest, Completions, MAX_COMPLETIONS};
pub use content::{ContentBlock, ToolContent};
pub use context::Context;
pub use disabled::Disabled;
pub use effect::{Confirmation, Effect};
pub use error::{AgentError, ErrorCategory, codes};
pub use execution::{ExecutionId, ExecutionKind, ExecutionStatus};
pub use grant::Grant;
pub use history::ExecutionRecord;
pub use idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, LeaseTerms, MAX_REQUEST_ID_LEN,
    MemoryStoreLimits, Recorded, Release, StoreError, Waiter,
};
pub use limits::Limits;
pub use memory_store::MemoryStore;
pub use outcome::{Outcome, OutcomeKind};
pub use progress::{PROGRESS_INTERVAL, ProgressReporter, ProgressSink};
pub use prompt::{
    IntoMessages, Message, MessageContent, Messages, Prompt, PromptArgument, PromptEntry,
    PromptSpec, Role,
};
pub use quotas::Quotas;
pub use rate_buckets::RateBuckets;
pub use rate_limit::RateLimit;
pub use rate_limit_store::{FALLBACK_WARNING_EVERY, RateLimitStore};
pub use records::{RecordStore, Records};
pub use redemption::{
    MAX_REDEEMED, MAX_REDEEMED_PER_PRINCIPAL, MAX_REDEEMING_PRINCIPALS, MemoryRedemptionStore,
    Redemption, RedemptionKey, RedemptionStore, Redemptions,
};
pub use resource::{
    Body, ChangeFeed, ChangeSink, Content, Contents, IntoContents, MAX_URI_LEN, ProvidedResource,
    ProviderEntry, Resource, ResourceChange, ResourceChanges, ResourceEntry, ResourceProvider,
    ResourceSpec, ResourceWatch, TemplateError, UriTemplate, Watching,
};
// Serving a directory's files as resources (feature `fs`): `Directory`, its limits and its
// error codes.
#[cfg(feature = "fs")]
pub use resource::{Directory, directory};
pub use runtime::{
    Answer, CallTool, Complete, CompletionTarget, GetPrompt, Incoming, Middleware, Next, Operation,
    ReadResource, Request, Runtime,
};
pub use schema::SchemaProfile;
pub use state::{Requirements, State};
pub use task::{
    Created, MemoryTaskStore, MemoryTaskStoreLimits, NewTask, Responded, TaskEnding, TaskId,
    TaskKey, TaskLease, TaskProgress, TaskRecord, TaskReport, TaskSignals, TaskStatus, TaskStore,
    TaskSupport,
};
pub use tokio_util::sync::CancellationToken;
pub use tool::{Invocation, NoInput, Tool, ToolInput, ToolOutput, ToolSpec};
