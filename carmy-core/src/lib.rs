//! # carmy-core
//!
//! The catalog and the execution runtime of [Carmy](https://docs.rs/carmy): tools with explicit
//! side effects, argument validation against the published schema, confirmation from the host,
//! idempotency by request id, parallel safety, deadlines, cancellation and execution records.
//! It knows nothing of MCP; adapters such as `carmy-mcp` project it onto a protocol.
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

mod builder;
mod catalog;
mod context;
mod effect;
mod erased;
mod error;
mod execution;
mod history;
mod idempotency;
mod limits;
mod portable;
mod progress;
mod runtime;
mod schema;
mod state;
pub mod testing;
mod tool;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use builder::{BuildError, BuildProblem, Carmy};
pub use catalog::{Catalog, ToolEntry, is_valid_tool_name};
pub use context::Context;
pub use effect::{Confirmation, Effect};
pub use error::{AgentError, ErrorCategory, codes};
pub use execution::{ExecutionId, ExecutionStatus, Outcome};
pub use history::ExecutionRecord;
pub use idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, MemoryStore, MemoryStoreLimits, Recorded,
    Waiter,
};
pub use limits::Limits;
pub use portable::check_portable;
pub use progress::{PROGRESS_INTERVAL, ProgressReporter, ProgressSink};
pub use runtime::{Request, Runtime};
pub use schema::{
    Direction, SchemaProfile, drop_optional_nulls, is_object_schema, make_portable, schema_for,
};
pub use state::{Requirements, State};
pub use tokio_util::sync::CancellationToken;
pub use tool::{Invocation, NoInput, Tool, ToolInput, ToolOutput, ToolSpec};
