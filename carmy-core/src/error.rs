//! `AgentError`: the machine-readable error a tool or the runtime returns to an agent.

use std::{borrow::Cow, fmt};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    excerpt::excerpt,
    grant::Grant,
    limits::{MAX_REQUEST_ID_LEN, MAX_TOOL_NAME_LEN},
    rate_limit::RateLimit,
};

/// How much of a task id an error quotes: ids are 37 bytes, anything longer is the caller's
/// noise.
const MAX_TASK_ID_QUOTE: usize = 64;

/// The broad class of an error, so an agent can decide what to do next without parsing text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCategory {
    /// The arguments are wrong; fix them before retrying.
    Validation,
    /// The tool or a resource it names does not exist.
    NotFound,
    /// The caller may not do this (yet): a grant or an approval is missing.
    Permission,
    /// The request clashes with the current state or with an earlier request.
    Conflict,
    /// The execution was cancelled before it finished.
    Cancelled,
    /// The execution ran out of time.
    Timeout,
    /// A bug on the server side.
    Internal,
    /// The server is at a limit; retry later.
    Capacity,
    /// A dependency is down; retry later.
    Unavailable,
}

impl ErrorCategory {
    /// Whether errors of this category are worth retrying unchanged, when the error itself does
    /// not say.
    pub const fn default_retryable(self) -> bool {
        matches!(self, Self::Timeout | Self::Capacity | Self::Unavailable)
    }
}

/// Stable codes the runtime itself produces. Tools are free to use their own codes as well.
pub mod codes {
    /// No tool of that name is in the catalog.
    pub const TOOL_NOT_FOUND: &str = "TOOL_NOT_FOUND";
    /// No resource has that URI, and no resource template matches it.
    pub const RESOURCE_NOT_FOUND: &str = "RESOURCE_NOT_FOUND";
    /// No prompt has that name.
    pub const PROMPT_NOT_FOUND: &str = "PROMPT_NOT_FOUND";
    /// The arguments do not match the tool's input schema.
    pub const INVALID_ARGUMENTS: &str = "INVALID_ARGUMENTS";
    /// The tool needs the host's grant `confirm:<tool>`, which the context does not hold.
    pub const CONFIRMATION_REQUIRED: &str = "CONFIRMATION_REQUIRED";
    /// The human declined to confirm the call.
    pub const CONFIRMATION_DECLINED: &str = "CONFIRMATION_DECLINED";
    /// Nobody answered the confirmation in time (`Limits::approval_timeout`); calling again asks
    /// again.
    pub const CONFIRMATION_TIMEOUT: &str = "CONFIRMATION_TIMEOUT";
    /// A confirmation answer could not be trusted: tampered with, expired, used before, or made
    /// for another tool, other arguments or another principal.
    pub const CONFIRMATION_INVALID: &str = "CONFIRMATION_INVALID";
    /// The request id is longer than [`MAX_REQUEST_ID_LEN`](crate::MAX_REQUEST_ID_LEN) bytes.
    pub const INVALID_REQUEST_ID: &str = "INVALID_REQUEST_ID";
    /// The request id was used before with a different tool or different arguments.
    pub const IDEMPOTENCY_CONFLICT: &str = "IDEMPOTENCY_CONFLICT";
    /// An earlier execution with this request id was interrupted after it may have had effects.
    pub const EXECUTION_UNCERTAIN: &str = "EXECUTION_UNCERTAIN";
    /// The execution passed its deadline.
    pub const TIMEOUT: &str = "TIMEOUT";
    /// The execution was cancelled.
    pub const CANCELLED: &str = "CANCELLED";
    /// The tool panicked.
    pub const TOOL_PANIC: &str = "TOOL_PANIC";
    /// The tool returned output that does not match its own output schema.
    pub const INVALID_OUTPUT: &str = "INVALID_OUTPUT";
    /// The result (a tool's output, a read's contents, a prompt's messages, a completion's
    /// values) is larger than [`Limits::max_result_bytes`](crate::Limits::max_result_bytes):
    /// it was dropped.
    pub const OUTPUT_TOO_LARGE: &str = "OUTPUT_TOO_LARGE";
    /// A runtime limit is reached (concurrent executions, a tool's turn, the idempotency
    /// store).
    pub const CAPACITY: &str = "CAPACITY";
    /// The idempotency store could not be reached: nothing ran; retry.
    pub const STORE_UNAVAILABLE: &str = "STORE_UNAVAILABLE";
    /// The request id's call ran, but its outcome was too large to keep for replay.
    pub const OUTCOME_NOT_KEPT: &str = "OUTCOME_NOT_KEPT";
    /// The caller may not call this tool: the host's access rules leave it out (it is not
    /// listed to the caller either).
    pub const TOOL_NOT_ALLOWED: &str = "TOOL_NOT_ALLOWED";
    /// The caller may not read this resource: the host's access rules leave it out.
    pub const RESOURCE_NOT_ALLOWED: &str = "RESOURCE_NOT_ALLOWED";
    /// The caller may not get this prompt: the host's access rules leave it out.
    pub const PROMPT_NOT_ALLOWED: &str = "PROMPT_NOT_ALLOWED";
    /// The caller made more calls of the tool than its rate limit allows; nothing ran. Retryable
    /// after `details.retry_after_ms`.
    pub const RATE_LIMITED: &str = "RATE_LIMITED";
    /// Something failed inside the server.
    pub const INTERNAL: &str = "INTERNAL";
    /// The tool asked the caller's host a question (a form, the model, the roots), which it
    /// answers on its next try.
    pub const INPUT_REQUIRED: &str = "INPUT_REQUIRED";
    /// The tool asked the caller's host something it cannot answer (no form, no model).
    pub const CANNOT_ASK: &str = "CANNOT_ASK";
    /// The caller's host was asked a tool's question and did not answer (it failed, or went
    /// away); retryable.
    pub const ASK_FAILED: &str = "ASK_FAILED";
    /// The host's answer to a tool's question is not of the kind asked.
    pub const INVALID_ANSWER: &str = "INVALID_ANSWER";
    /// A tool wrote a record outside a transaction: only a `transactional` tool may.
    pub const RECORDS_READ_ONLY: &str = "RECORDS_READ_ONLY";
    /// Records were used where the runtime's store keeps none.
    pub const RECORDS_UNAVAILABLE: &str = "RECORDS_UNAVAILABLE";
    /// A record's name, size or type is not what records allow or what it is read as.
    pub const INVALID_RECORD: &str = "INVALID_RECORD";
    /// A transactional tool's reads kept changing under it, run after run, until its deadline
    /// or its last attempt; nothing was committed (retryable).
    pub const TRANSACTION_CONFLICT: &str = "TRANSACTION_CONFLICT";
    /// No task of that id is known to its caller (never created, expired, or another
    /// principal's).
    pub const TASK_NOT_FOUND: &str = "TASK_NOT_FOUND";
    /// The tool runs only as a task, and its caller cannot follow one.
    pub const TASK_REQUIRED: &str = "TASK_REQUIRED";
    /// The task's store could not be reached: nothing was read or changed; retry.
    pub const TASK_STORE_UNAVAILABLE: &str = "TASK_STORE_UNAVAILABLE";
    /// The process running a task stopped answering for it (its lease ran out): how it ended,
    /// and its effects, are unknown.
    pub const EXECUTION_LOST: &str = "EXECUTION_LOST";
}

/// An error an agent can act on: a stable `code`, a human `message`, a `category`, whether
/// retrying unchanged may succeed, optional structured `details` and a suggested next tool.
///
/// Serialized as `{"error": {...}}` through [`AgentError::to_envelope`]; the struct itself
/// serializes to the inner object.
///
/// ```
/// use carmy_core::{AgentError, ErrorCategory};
///
/// let err = AgentError::not_found("PRODUCT_NOT_FOUND", "no product with id 42")
///     .with_details(serde_json::json!({ "id": 42 }))
///     .with_next_tool("search_products");
/// assert_eq!(err.category(), ErrorCategory::NotFound);
/// assert!(!err.retryable());
/// assert_eq!(err.to_envelope()["error"]["next_tool"], "search_products");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub struct AgentError {
    code: Cow<'static, str>,
    message: String,
    category: ErrorCategory,
    retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_tool: Option<String>,
}

impl AgentError {
    /// An error with an explicit code and category; retryability follows the category.
    pub fn new(
        category: ErrorCategory,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            category,
            retryable: category.default_retryable(),
            details: None,
            next_tool: None,
        }
    }

    /// Bad arguments, in the tool's own terms (`OUT_OF_STOCK` is not one; `QUANTITY_TOO_LARGE` is).
    pub fn validation(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Validation, code, message)
    }

    /// A resource the arguments name does not exist.
    pub fn not_found(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::NotFound, code, message)
    }

    /// The caller may not do this.
    pub fn permission(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Permission, code, message)
    }

    /// The request clashes with the current state.
    pub fn conflict(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Conflict, code, message)
    }

    /// A dependency is down; retryable.
    pub fn unavailable(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Unavailable, code, message)
    }

    /// A server-side failure (`INTERNAL`), with a message safe to show an agent.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Internal, codes::INTERNAL, message)
    }

    /// Overrides the retryability the category implies.
    #[must_use]
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Attaches structured details (the bad field, the current stock...).
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Suggests the tool an agent should call next.
    #[must_use]
    pub fn with_next_tool(mut self, tool: impl Into<String>) -> Self {
        self.next_tool = Some(tool.into());
        self
    }

    /// The stable code, e.g. `TOOL_NOT_FOUND`.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The broad class of the error.
    pub fn category(&self) -> ErrorCategory {
        self.category
    }

    /// Whether retrying the same call unchanged may succeed.
    pub fn retryable(&self) -> bool {
        self.retryable
    }

    /// Structured details, if any.
    pub fn details(&self) -> Option<&Value> {
        self.details.as_ref()
    }

    /// The suggested next tool, if any.
    pub fn next_tool(&self) -> Option<&str> {
        self.next_tool.as_deref()
    }

    /// The wire form: `{"error": {"code": ..., "message": ..., ...}}`.
    pub fn to_envelope(&self) -> Value {
        serde_json::json!({ "error": self })
    }

    // Runtime errors: one constructor per code so their wording stays in one place.

    pub(crate) fn tool_not_found(name: &str) -> Self {
        // A name longer than any tool's is echoed in part: it is the caller's input.
        let name = excerpt(name, MAX_TOOL_NAME_LEN);
        Self::not_found(codes::TOOL_NOT_FOUND, format!("no tool named `{name}`"))
            .with_details(serde_json::json!({ "tool": name }))
    }

    pub(crate) fn resource_not_found(uri: &str) -> Self {
        Self::not_found(codes::RESOURCE_NOT_FOUND, format!("no resource at `{uri}`"))
            .with_details(serde_json::json!({ "uri": uri }))
    }

    pub(crate) fn prompt_not_found(name: &str) -> Self {
        Self::not_found(codes::PROMPT_NOT_FOUND, format!("no prompt named `{name}`"))
            .with_details(serde_json::json!({ "prompt": name }))
    }

    pub(crate) fn invalid_request_id(length: usize) -> Self {
        Self::validation(
            codes::INVALID_REQUEST_ID,
            format!(
                "the request id is {length} bytes long; request ids are at most \
                 {MAX_REQUEST_ID_LEN} bytes"
            ),
        )
        .with_details(serde_json::json!({ "length": length, "max_length": MAX_REQUEST_ID_LEN }))
    }

    pub(crate) fn invalid_arguments(message: String, details: Value) -> Self {
        Self::validation(codes::INVALID_ARGUMENTS, message).with_details(details)
    }

    /// `CONFIRMATION_REQUIRED`: `tool` needs confirmation and the host granted none (nor
    /// could anyone be asked). For approvers that cannot ask.
    pub fn confirmation_required(tool: &str) -> Self {
        let grant = Grant::confirm(tool);
        Self::permission(
            codes::CONFIRMATION_REQUIRED,
            format!("`{tool}` needs confirmation: the host must grant `{grant}`"),
        )
        .with_details(serde_json::json!({ "grant": grant.as_str() }))
    }

    /// `INPUT_REQUIRED`: the tool asked questions its caller answers on its next try.
    pub(crate) fn input_required(tool: &str) -> Self {
        Self::new(
            ErrorCategory::Validation,
            codes::INPUT_REQUIRED,
            format!("`{tool}` asked for input: call again with the answers"),
        )
    }

    /// `CANNOT_ASK`: the caller's host cannot answer a question of `kind`. For adapters, and
    /// the runtime when no adapter asks.
    pub fn cannot_ask(kind: &str) -> Self {
        Self::new(
            ErrorCategory::Validation,
            codes::CANNOT_ASK,
            format!("the tool needs to ask its caller's host ({kind}), which cannot answer that"),
        )
        .with_details(serde_json::json!({ "ask": kind }))
    }

    /// `EXECUTION_LOST`: what a task whose holder's lease ran out ended with.
    pub(crate) fn execution_lost() -> Self {
        Self::new(
            ErrorCategory::Unavailable,
            codes::EXECUTION_LOST,
            "the server running this task stopped answering for it before it finished; what it \
             did, if anything, is unknown: check before calling again",
        )
        .with_retryable(false)
    }

    /// `TASK_NOT_FOUND`: no task `id` for this caller.
    pub(crate) fn task_not_found(id: &str) -> Self {
        let id = excerpt(id, MAX_TASK_ID_QUOTE);
        Self::not_found(codes::TASK_NOT_FOUND, format!("no task `{id}`"))
            .with_details(serde_json::json!({ "task_id": id }))
    }

    /// `TASK_REQUIRED`: `tool` runs only as a task, which the caller cannot follow.
    pub(crate) fn task_required(tool: &str) -> Self {
        Self::new(
            ErrorCategory::Validation,
            codes::TASK_REQUIRED,
            format!("`{tool}` runs only as a task, and this caller cannot follow tasks"),
        )
        .with_details(serde_json::json!({ "tool": tool }))
    }

    pub(crate) fn confirmation_asked(tool: &str) -> Self {
        Self::permission(
            codes::CONFIRMATION_REQUIRED,
            format!("`{tool}` needs confirmation: the user was asked; call again with the answer"),
        )
        .with_details(serde_json::json!({ "grant": Grant::confirm(tool).as_str() }))
    }

    /// `CONFIRMATION_DECLINED`: the human was asked to approve a call of `tool` and did not.
    /// For adapters that ask the human through their client.
    pub fn confirmation_declined(tool: &str) -> Self {
        Self::permission(
            codes::CONFIRMATION_DECLINED,
            format!("the user did not approve this call of `{tool}`; it did not run"),
        )
        .with_details(serde_json::json!({ "tool": tool }))
    }

    /// `CONFIRMATION_INVALID`: a confirmation answer for `tool` that cannot be trusted; `reason`
    /// says why in terms safe to show a client. Calling again asks anew.
    pub fn confirmation_invalid(tool: &str, reason: &str) -> Self {
        Self::permission(
            codes::CONFIRMATION_INVALID,
            format!(
                "the confirmation of this call of `{tool}` is not valid ({reason}); it did not run"
            ),
        )
        .with_details(serde_json::json!({ "tool": tool }))
    }

    pub(crate) fn confirmation_timeout(tool: &str, waited: std::time::Duration) -> Self {
        Self::new(
            ErrorCategory::Timeout,
            codes::CONFIRMATION_TIMEOUT,
            format!(
                "nobody confirmed this call of `{tool}` within {} s; it did not run; call again \
                 to ask again",
                waited.as_secs()
            ),
        )
        .with_details(serde_json::json!({ "tool": tool }))
    }

    pub(crate) fn idempotency_conflict(request_id: &str) -> Self {
        Self::conflict(
            codes::IDEMPOTENCY_CONFLICT,
            format!(
                "request id `{request_id}` was already used for a different call; \
                 use a new request id for new arguments"
            ),
        )
    }

    pub(crate) fn execution_uncertain(request_id: &str, previous: &str) -> Self {
        Self::conflict(
            codes::EXECUTION_UNCERTAIN,
            format!(
                "the execution for request id `{request_id}` was interrupted ({previous}) and may \
                 have had effects; check the current state before retrying with a new request id"
            ),
        )
    }

    pub(crate) fn transaction_conflict(tool: &str, attempts: u32) -> Self {
        Self::conflict(
            codes::TRANSACTION_CONFLICT,
            format!(
                "`{tool}` ran {attempts} times, and each time another execution changed the \
                 records it read before it could commit; nothing was committed: retry shortly"
            ),
        )
        .with_retryable(true)
        .with_details(serde_json::json!({ "tool": tool, "attempts": attempts }))
    }

    pub(crate) fn timeout(after: std::time::Duration) -> Self {
        Self::new(
            ErrorCategory::Timeout,
            codes::TIMEOUT,
            format!(
                "the execution did not finish within {} ms",
                after.as_millis()
            ),
        )
    }

    pub(crate) fn cancelled() -> Self {
        Self::new(
            ErrorCategory::Cancelled,
            codes::CANCELLED,
            "the execution was cancelled",
        )
    }

    pub(crate) fn tool_panic() -> Self {
        Self::new(
            ErrorCategory::Internal,
            codes::TOOL_PANIC,
            "the tool failed unexpectedly",
        )
    }

    pub(crate) fn invalid_output(message: String) -> Self {
        Self::new(ErrorCategory::Internal, codes::INVALID_OUTPUT, message)
    }

    /// `OUTPUT_TOO_LARGE`: the result of the `kind` (`tool`, `resource`, `prompt`,
    /// `completion`) named `name` is larger than `max` bytes, and was dropped. Not retryable:
    /// the same request gets the same result.
    pub(crate) fn output_too_large(kind: &str, name: &str, max: usize) -> Self {
        Self::new(
            ErrorCategory::Internal,
            codes::OUTPUT_TOO_LARGE,
            format!(
                "the result of the {kind} `{name}` is larger than {max} bytes, the most this \
                 server returns, and was dropped: ask for less (a narrower query, a smaller page)"
            ),
        )
        .with_details(serde_json::json!({ kind: name, "max_result_bytes": max }))
    }

    /// `RESOURCE_NOT_ALLOWED`: the prompt `prompt` rendered with the resource `uri` embedded,
    /// which the context's access rules leave out (given cut short).
    pub(crate) fn embedded_resource_not_allowed(prompt: &str, uri: &str) -> Self {
        Self::permission(
            codes::RESOURCE_NOT_ALLOWED,
            format!("the prompt `{prompt}` embeds `{uri}`, which this caller may not read"),
        )
        .with_details(serde_json::json!({ "prompt": prompt, "uri": uri }))
    }

    /// `TOOL_NOT_ALLOWED`: the context's access rules leave `tool` out.
    pub(crate) fn tool_not_allowed(tool: &str) -> Self {
        Self::permission(
            codes::TOOL_NOT_ALLOWED,
            format!("this caller may not call `{tool}`; it did not run"),
        )
        .with_details(serde_json::json!({ "tool": tool }))
    }

    /// `RESOURCE_NOT_ALLOWED`: the context's access rules leave `uri` out (given cut short).
    pub(crate) fn resource_not_allowed(uri: &str) -> Self {
        Self::permission(
            codes::RESOURCE_NOT_ALLOWED,
            format!("this caller may not read `{uri}`"),
        )
        .with_details(serde_json::json!({ "uri": uri }))
    }

    /// `PROMPT_NOT_ALLOWED`: the context's access rules leave `prompt` out (given cut short).
    pub(crate) fn prompt_not_allowed(prompt: &str) -> Self {
        Self::permission(
            codes::PROMPT_NOT_ALLOWED,
            format!("this caller may not get the prompt `{prompt}`"),
        )
        .with_details(serde_json::json!({ "prompt": prompt }))
    }

    /// `RATE_LIMITED`: `what` ("calls of `search` by this caller", "requests from this
    /// address") went past `limit`, and the next is accepted after `wait`. Retryable; the
    /// details say when (`retry_after_ms`, rounded up: retrying then succeeds) and the limit.
    pub fn rate_limited(what: &str, limit: RateLimit, wait: std::time::Duration) -> Self {
        let millis = |duration: std::time::Duration| {
            u64::try_from(duration.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
        };
        let wait_ms = millis(wait).max(1);
        Self::new(
            ErrorCategory::Capacity,
            codes::RATE_LIMITED,
            format!("too many {what} (the limit is {limit}); nothing ran: retry in {wait_ms} ms"),
        )
        .with_details(serde_json::json!({
            "retry_after_ms": wait_ms,
            "requests": limit.requests(),
            "period_ms": limit.period().map(millis),
            "burst": limit.burst_size(),
        }))
    }

    /// `RATE_LIMITED` for a call of `tool`: its caller's bucket is empty for `wait` more.
    pub(crate) fn tool_rate_limited(
        tool: &str,
        limit: RateLimit,
        wait: std::time::Duration,
    ) -> Self {
        let mut error =
            Self::rate_limited(&format!("calls of `{tool}` by this caller"), limit, wait);
        if let Some(Value::Object(details)) = &mut error.details {
            details.insert("tool".to_owned(), Value::from(tool));
        }
        error
    }

    pub(crate) fn capacity(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Capacity, codes::CAPACITY, message)
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_to_a_stable_envelope() {
        let err = AgentError::tool_not_found("nope");
        let value = err.to_envelope();
        assert_eq!(value["error"]["code"], "TOOL_NOT_FOUND");
        assert_eq!(value["error"]["category"], "not_found");
        assert_eq!(value["error"]["retryable"], false);
        assert_eq!(value["error"]["details"]["tool"], "nope");
        assert!(value["error"].get("next_tool").is_none());
        let back: AgentError = serde_json::from_value(value["error"].clone()).unwrap();
        assert_eq!(back, err);
    }

    #[test]
    fn retryability_follows_the_category_unless_overridden() {
        assert!(AgentError::capacity("full").retryable());
        assert!(AgentError::timeout(std::time::Duration::from_secs(1)).retryable());
        assert!(!AgentError::cancelled().retryable());
        assert!(AgentError::internal("x").with_retryable(true).retryable());
    }
}
