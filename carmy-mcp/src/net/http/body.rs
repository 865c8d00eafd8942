//! A JSON `POST` body, read and checked before rmcp: at most so many bytes (`413`), a leading
//! byte order mark dropped, and JSON that is not a JSON-RPC message answered `400` with JSON-RPC's
//! own codes. rmcp would answer both `415 Unsupported Media Type`, which tells a client its
//! `Content-Type` is wrong when it is the body that is.
//!
//! The verdict is rmcp's own: the body is parsed as rmcp's `ClientJsonRpcMessage`, so what
//! passes here parses there. That is a second parse of every message, a few microseconds for
//! a call's usual few hundred bytes.

use std::pin::Pin;

use axum::{
    body::{Body, Bytes},
    response::Response,
};
use http::{HeaderMap, header};
use http_body::Body as _;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId};

use super::refusal;

/// What a `POST` carries, as far as the guard needs to know.
#[derive(Debug)]
pub(super) struct Message {
    /// The body to hand on, without its byte order mark.
    pub(super) bytes: Bytes,
    /// Whether it is an `initialize` request (which opens a session when it names none).
    pub(super) initialize: bool,
    /// The request's JSON-RPC `id`, to answer a refusal by.
    pub(super) id: Option<RequestId>,
}

/// Whether the request says its body is JSON: only such bodies are read here; rmcp refuses the
/// others (`415`).
pub(super) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// The UTF-8 byte order mark. RFC 8259 lets a parser ignore it; stdio does, so HTTP does too.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Reads `body` (at most `max_bytes`) and checks it is a JSON-RPC message.
pub(super) async fn read(
    headers: &HeaderMap,
    body: Body,
    max_bytes: usize,
) -> Result<Message, Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > max_bytes as u64) {
        return Err(refusal::too_large(max_bytes));
    }
    let mut bytes = collect(body, max_bytes).await?;
    if bytes.starts_with(BOM) {
        bytes = bytes.slice(BOM.len()..);
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        Ok(message) => {
            let (initialize, id) = match message {
                ClientJsonRpcMessage::Request(request) => (
                    matches!(request.request, ClientRequest::InitializeRequest(_)),
                    Some(request.id),
                ),
                _ => (false, None),
            };
            Ok(Message {
                bytes,
                initialize,
                id,
            })
        }
        Err(error) if error.is_syntax() || error.is_eof() => Err(refusal::not_json(&error)),
        Err(error) => Err(refusal::not_json_rpc(&error)),
    }
}

/// The whole body, or `413` as soon as it passes `max_bytes`.
async fn collect(mut body: Body, max_bytes: usize) -> Result<Bytes, Response> {
    let mut first: Option<Bytes> = None;
    let mut rest: Vec<u8> = Vec::new();
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        let Some(frame) = frame else { break };
        let Ok(data) = frame.map(|frame| frame.into_data()) else {
            // The client went away mid-body: nobody reads this answer.
            return Err(refusal::unreadable());
        };
        let Ok(data) = data else { continue };
        let so_far = first.as_ref().map_or(0, Bytes::len) + rest.len();
        if data.len() > max_bytes - so_far {
            return Err(refusal::too_large(max_bytes));
        }
        // The usual body is one frame: kept as it came, without a copy.
        match &first {
            None => first = Some(data),
            Some(first) => {
                if rest.is_empty() {
                    rest.extend_from_slice(first);
                }
                rest.extend_from_slice(&data);
            }
        }
    }
    Ok(if rest.is_empty() {
        first.unwrap_or_default()
    } else {
        Bytes::from(rest)
    })
}
