//! A runtime error as the JSON-RPC error of a request whose failures are not a result (a
//! prompt's render, a completion, a read): the caller's mistake, `-32602`, or the server's,
//! `-32603`, each carrying the `{"error": {...}}` envelope as its data.

use carmy_core::{AgentError, ErrorCategory};
use rmcp::model::{ErrorCode, ErrorData};

/// `error` as a JSON-RPC error: `-32602` when the request is at fault (it named nothing, or
/// [`by_caller`] says so), `-32603` otherwise.
pub(crate) fn request_error(error: &AgentError, unroutable: bool) -> ErrorData {
    let code = if unroutable || by_caller(error.category()) {
        ErrorCode::INVALID_PARAMS
    } else {
        ErrorCode::INTERNAL_ERROR
    };
    with_envelope(code, error)
}

/// Whether an error of `category` is the request's fault: its arguments are wrong, name
/// something that does not exist, or ask for what its caller may not have.
pub(crate) fn by_caller(category: ErrorCategory) -> bool {
    matches!(
        category,
        ErrorCategory::Validation | ErrorCategory::NotFound | ErrorCategory::Permission
    )
}

/// `error` under `code`, its envelope as the data.
pub(crate) fn with_envelope(code: ErrorCode, error: &AgentError) -> ErrorData {
    ErrorData::new(code, error.message().to_owned(), Some(error.to_envelope()))
}
