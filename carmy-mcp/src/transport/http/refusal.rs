//! The answers the HTTP layer gives itself, before rmcp: an HTTP status a client can act on
//! and, where a client expects JSON-RPC, a JSON-RPC error naming the request (or `id: null`
//! when there is none to name), with Carmy's error envelope as its `data`.

use std::time::Duration;

use axum::{
    body::Body,
    response::{IntoResponse, Response},
};
use carmy_core::{AgentError, ErrorCategory, MAX_REQUEST_ID_LEN, RateLimit, codes};
use http::{HeaderValue, StatusCode, header};
use rmcp::model::{ErrorCode, RequestId};

use super::sessions::Full;
use crate::transport::http::auth::{Refusal, Unauthorized};

/// Carmy's JSON-RPC code for "a bound is reached" (the server's sessions, connections, a
/// client's rate, a legacy SSE session's backlog): -32000 to -32099 are the implementation's
/// "server errors", and neither JSON-RPC nor MCP names one for capacity. The error's `data`
/// carries the `CAPACITY` envelope, which says which bound.
const CAPACITY: ErrorCode = ErrorCode(-32000);

/// `status` with a JSON-RPC error answering `id`.
fn json_rpc(
    status: StatusCode,
    id: Option<&RequestId>,
    code: ErrorCode,
    message: &str,
    data: Option<serde_json::Value>,
) -> Response {
    let mut error = serde_json::json!({ "code": code.0, "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `400`: the body is not JSON (`-32700`).
pub(super) fn not_json(error: &serde_json::Error) -> Response {
    // A syntax error's message names a line and column, never the input.
    let message = format!("Parse error: {error}");
    json_rpc(
        StatusCode::BAD_REQUEST,
        None,
        ErrorCode::PARSE_ERROR,
        &message,
        None,
    )
}

/// `400`: JSON, but not a JSON-RPC message (`-32600`).
pub(super) fn not_json_rpc(error: &serde_json::Error) -> Response {
    // serde's message may quote the input (`invalid type: string "..."`): a bounded excerpt.
    let message = format!("Invalid Request: {}", excerpt(&error.to_string(), 200));
    json_rpc(
        StatusCode::BAD_REQUEST,
        None,
        ErrorCode::INVALID_REQUEST,
        &message,
        None,
    )
}

/// `400`: a JSON object, but not a JSON-RPC message (`-32600`), saying why.
pub(super) fn not_a_message(problem: &str) -> Response {
    let message = format!("Invalid Request: {problem}");
    json_rpc(
        StatusCode::BAD_REQUEST,
        None,
        ErrorCode::INVALID_REQUEST,
        &message,
        None,
    )
}

/// `400`: the request's id is longer than request ids may be (`-32600`, with an
/// `INVALID_REQUEST_ID` error). Answered `id: null`: the id is not echoed.
pub(super) fn invalid_request_id(length: usize) -> Response {
    let message = format!(
        "Invalid Request: the request id is {length} bytes long; request ids are at most \
         {MAX_REQUEST_ID_LEN} bytes"
    );
    let error = AgentError::validation(codes::INVALID_REQUEST_ID, message.clone())
        .with_details(serde_json::json!({ "length": length, "max_length": MAX_REQUEST_ID_LEN }));
    json_rpc(
        StatusCode::BAD_REQUEST,
        None,
        ErrorCode::INVALID_REQUEST,
        &message,
        Some(error.to_envelope()),
    )
}

/// `400`: the body could not be read to its end.
pub(super) fn unreadable() -> Response {
    json_rpc(
        StatusCode::BAD_REQUEST,
        None,
        ErrorCode::INVALID_REQUEST,
        "the request body could not be read",
        None,
    )
}

/// `413`: the body is longer than the server accepts.
pub(super) fn too_large(max_body_bytes: usize) -> Response {
    let message = format!("the request body is longer than {max_body_bytes} bytes");
    json_rpc(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        ErrorCode::INVALID_REQUEST,
        &message,
        None,
    )
}

/// `503` (the server's bound) or `429` (the principal's): no session (nor `subscriptions/listen`
/// stream, which counts as one) can be opened now. A place frees when a session is closed
/// (`DELETE`) or reaped after `idle_timeout`, or a stream ends.
pub(super) fn sessions_full(
    full: Full,
    id: Option<&RequestId>,
    idle_timeout: Duration,
) -> Response {
    let (status, message, details) = match full {
        Full::Server { max } => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the server holds its maximum of {max} sessions (open subscriptions/listen \
                 streams count as sessions); retry later"
            ),
            serde_json::json!({ "max_sessions": max }),
        ),
        Full::Principal { max } => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "this principal holds its maximum of {max} sessions (open \
                 subscriptions/listen streams count as sessions); close one (DELETE, or end \
                 a stream) or retry once an idle one is closed"
            ),
            serde_json::json!({ "max_sessions_per_principal": max }),
        ),
    };
    let error = AgentError::new(ErrorCategory::Capacity, codes::CAPACITY, message.clone())
        .with_details(details);
    let mut response = json_rpc(status, id, CAPACITY, &message, Some(error.to_envelope()));
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(idle_timeout.as_secs().max(1)),
    );
    response
}

/// `503` with `Retry-After`: every connection the server may hold is serving a request, and
/// this one was accepted only to say so.
pub(super) fn no_room(max_connections: usize) -> Response {
    let message =
        format!("the server is serving its maximum of {max_connections} connections; retry later");
    retry_later(
        StatusCode::SERVICE_UNAVAILABLE,
        None,
        message,
        serde_json::json!({ "max_connections": max_connections }),
    )
}

/// A `CAPACITY` refusal with `status`, asking the client to retry in a second.
fn retry_later(
    status: StatusCode,
    id: Option<&RequestId>,
    message: String,
    details: serde_json::Value,
) -> Response {
    let error = AgentError::new(ErrorCategory::Capacity, codes::CAPACITY, message.clone())
        .with_details(details);
    let mut response = json_rpc(status, id, CAPACITY, &message, Some(error.to_envelope()));
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// What a legacy SSE session has too much of to take another request.
#[derive(Clone, Copy, Debug)]
pub(super) enum Backlog {
    /// Requests in progress.
    InFlight { max: usize },
    /// Bytes waiting for its client to read them (half the bound).
    Outbox { max: usize },
}

/// `429` with `Retry-After`: this session takes no more requests until its client reads what
/// waits for it, or its calls in progress end.
pub(super) fn backlog(backlog: Backlog, id: &RequestId) -> Response {
    let (message, details) = match backlog {
        Backlog::InFlight { max } => (
            format!("this session has its maximum of {max} requests in progress; retry later"),
            serde_json::json!({ "max_in_flight": max }),
        ),
        Backlog::Outbox { max } => (
            format!(
                "this session's client is behind in reading its stream (half of {max} bytes \
                 wait); retry once it has read them"
            ),
            serde_json::json!({ "max_outbox_bytes": max }),
        ),
    };
    retry_later(StatusCode::TOO_MANY_REQUESTS, Some(id), message, details)
}

/// `429`: this client address sent more requests than `limit` allows; `Retry-After` says when
/// the next is accepted (whole seconds, rounded up), and the error's details in milliseconds.
pub(super) fn rate_limited(limit: RateLimit, wait: Duration) -> Response {
    let error = AgentError::rate_limited("requests from this address", limit, wait);
    let mut response = json_rpc(
        StatusCode::TOO_MANY_REQUESTS,
        None,
        CAPACITY,
        error.message(),
        Some(error.to_envelope()),
    );
    let seconds = wait.as_nanos().div_ceil(1_000_000_000).max(1);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(u64::try_from(seconds).unwrap_or(u64::MAX)),
    );
    response
}

/// `409`: the session's standalone stream is already open; one at a time.
pub(super) fn stream_open() -> Response {
    let message = "this session's stream (GET) is already open; one at a time";
    let error = AgentError::conflict("SESSION_STREAM_OPEN", message);
    json_rpc(
        StatusCode::CONFLICT,
        None,
        ErrorCode::INVALID_REQUEST,
        message,
        Some(error.to_envelope()),
    )
}

/// `404`, exactly as rmcp answers a session it does not know: another principal's session
/// does not exist for this one, and nothing tells the two apart.
pub(super) fn unknown_session() -> Response {
    // Built by hand: axum would add a `Content-Type` rmcp's answer does not have.
    let mut response = Response::new(Body::from("Not Found: Session not found"));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

/// A request the authenticator refused: `401` with its challenge, `403` with its challenge (a
/// scope is missing), or `503` with `Retry-After` (it cannot check credentials now).
pub(super) fn unauthorized(refused: &Unauthorized) -> Response {
    let (status, error) = match refused.status {
        Refusal::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthorized"),
        Refusal::Forbidden => (StatusCode::FORBIDDEN, "forbidden"),
        Refusal::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
    };
    let body = serde_json::json!({ "error": error, "reason": refused.reason() });
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    let headers = response.headers_mut();
    if refused.status == Refusal::Unavailable {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    } else if let Ok(challenge) = HeaderValue::from_str(&refused.challenge) {
        headers.insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// `403` for a call its token's scopes do not allow, with the challenge asking for one that does.
#[cfg(feature = "oauth")]
pub(super) fn insufficient_scope(challenge: &str, reason: &str) -> Response {
    unauthorized(&Unauthorized::forbidden(reason).challenge(challenge))
}

/// `504`: the request's deadline passed before its answer started.
pub(super) fn deadline_exceeded() -> Response {
    (
        StatusCode::GATEWAY_TIMEOUT,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"error":"request deadline exceeded"}"#,
    )
        .into_response()
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn excerpt(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
