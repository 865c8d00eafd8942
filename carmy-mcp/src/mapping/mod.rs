//! Carmy → MCP, in pure functions: catalog entries become `Tool`s (`tools.rs`), `Resource`s and
//! `ResourceTemplate`s (`resources.rs`) and `Prompt`s (`prompts.rs`), outcomes become
//! `tools/call`, `resources/read` and `prompts/get` answers (`outcome.rs`, with a tool's result
//! in `result.rs`; `resources.rs`, `prompts.rs`; content blocks in `content.rs`), task records
//! become `tasks/*` answers (`tasks.rs`), questions become MCP requests (`asks.rs`), among them
//! the confirmation form (`confirmation.rs`). Lists are paged the same way (`page.rs`), and the
//! failures of requests other than calls are JSON-RPC errors by one rule (`error.rs`). No protocol state,
//! nothing awaited: each `*/list` and each kind of answer is mapped in one place.

mod asks;
mod completion;
mod confirmation;
mod content;
mod error;
mod outcome;
mod page;
mod prompts;
mod resources;
mod result;
mod tasks;
mod tools;

pub(crate) use asks::{answers, input_requests, input_required, server_request};
pub(crate) use completion::{complete_result, target as completion_target};
pub use confirmation::{CONFIRM_FIELD, CONFIRM_INPUT_KEY};
pub(crate) use confirmation::{approves, confirmation};
pub(crate) use content::block as content_block;
pub(crate) use outcome::call_response;
pub(crate) use prompts::{PromptListing, get_result};
pub(crate) use resources::{ResourceListing, read_error, read_result};
pub(crate) use tasks::{task_error, task_result};
pub(crate) use tools::Listing;

/// `Tool._meta`: the declared effect (`none`, `read`, `write`, `destructive`, `external_write`).
pub const META_EFFECT: &str = "carmy/effect";
/// `Tool._meta`: whether the host must grant `confirm:<tool>` (`none`, `required`).
pub const META_CONFIRMATION: &str = "carmy/confirmation";
/// `Tool._meta`: whether executions of the tool may overlap.
pub const META_PARALLEL_SAFE: &str = "carmy/parallel_safe";
/// `tools/call` request `_meta`: the idempotency key of the call, chosen by the host.
pub const META_REQUEST_ID: &str = "carmy/request_id";
/// `CallToolResult._meta`: the execution that produced the result (the original one for a
/// replay).
pub const META_EXECUTION_ID: &str = "carmy/execution_id";
/// `CallToolResult._meta`: how the execution ended (`succeeded`, `failed`, `rejected`,
/// `replayed`, ...).
pub const META_STATUS: &str = "carmy/status";
/// `CallToolResult._meta` on errors: the error object (`code`, `message`, `category`,
/// `retryable`, `details`, `next_tool`).
pub const META_ERROR: &str = "carmy/error";
/// `Tool._meta`: whether the tool's calls may become tasks (`forbidden`, `optional`,
/// `required`).
pub const META_TASK: &str = "carmy/task";
/// `tasks/get` result `_meta`: the tool's latest progress, `{"done": .., "total": ..}`.
pub const META_PROGRESS: &str = "carmy/progress";
