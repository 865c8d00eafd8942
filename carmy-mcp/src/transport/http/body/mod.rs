//! A JSON `POST` body, read and checked before rmcp: at most so many bytes (`413`), a leading
//! byte order mark dropped, and a body that is not a JSON-RPC message answered `400` with
//! JSON-RPC's own codes. rmcp would answer both `415 Unsupported Media Type`, which tells a
//! client its `Content-Type` is wrong when it is the body that is. A request whose id is longer
//! than request ids may be ([`MAX_REQUEST_ID_LEN`] bytes, as the runtime bounds those it keeps)
//! is answered `400` too: its id stays in memory as long as the request is served.
//!
//! The check is one pass over the body that builds nothing (`envelope.rs`): parsing it as
//! rmcp's `ClientJsonRpcMessage` here as well would be a second full parse of every message, an
//! order of magnitude dearer than this pass, and rmcp parses it anyway. It applies rmcp's own
//! rule for what shape of object is which message, and a differential test against rmcp's
//! parser keeps the two in step. Only an `initialize`, once per session, is parsed in full, to
//! know whether it opens a session. The pass also keeps what later checks need (the id to
//! answer by, the method, a `tools/call`'s tool), so the body is classified once on its way in:
//! nothing before rmcp reads its bytes again.

use std::borrow::Cow;

use axum::{
    body::{Body, Bytes},
    response::Response,
};
use carmy_core::MAX_REQUEST_ID_LEN;
use http::{HeaderMap, header};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use rmcp::model::{ClientJsonRpcMessage, NumberOrString, RequestId};

use self::envelope::{Envelope, Kind, opens_session};
use super::refusal;

mod envelope;

/// What a `POST` carries, as far as the checks before rmcp need to know: classified once, as
/// the body is read.
#[derive(Clone, Debug)]
pub(super) struct Message {
    /// Whether it is an `initialize` request (which opens a session when it names none).
    pub(super) initialize: bool,
    /// The request's JSON-RPC `id`, to answer a refusal by.
    pub(super) id: Option<RequestId>,
    /// The tool a `tools/call` request names (which may need a scope the token lacks).
    #[cfg_attr(
        not(feature = "oauth"),
        allow(dead_code, reason = "only the OAuth scope check reads it")
    )]
    pub(super) tool: Option<String>,
    /// Whether it is a `subscriptions/listen` request, which opens a stream.
    pub(super) listen: bool,
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

/// Reads `body` (at most `max_bytes`) and checks it is a JSON-RPC message: the bytes to hand
/// on to rmcp (without a byte order mark), and what they carry.
pub(super) async fn read(
    headers: &HeaderMap,
    body: Body,
    max_bytes: usize,
) -> Result<(Bytes, Message), Response> {
    let bytes = read_bytes(headers, body, max_bytes).await?;
    let message = classify(&bytes)?;
    Ok((bytes, message))
}

/// Reads `body` (at most `max_bytes`) as the message it is, for a transport that parses its
/// messages itself (the legacy SSE one): parsed once, in full; the one-pass check runs only
/// when that fails, to say why with JSON-RPC's own codes.
pub(super) async fn read_message(
    headers: &HeaderMap,
    body: Body,
    max_bytes: usize,
) -> Result<ClientJsonRpcMessage, Response> {
    let bytes = read_bytes(headers, body, max_bytes).await?;
    match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        Ok(ClientJsonRpcMessage::Request(request)) => match &request.id {
            NumberOrString::String(id) if id.len() > MAX_REQUEST_ID_LEN => {
                Err(refusal::invalid_request_id(id.len()))
            }
            _ => Ok(ClientJsonRpcMessage::Request(request)),
        },
        Ok(message) => Ok(message),
        Err(error) => Err(classify(&bytes)
            .err()
            .unwrap_or_else(|| refusal::not_json_rpc(&error))),
    }
}

/// The body, at most `max_bytes` of it (`413` past that), without a byte order mark.
async fn read_bytes(headers: &HeaderMap, body: Body, max_bytes: usize) -> Result<Bytes, Response> {
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
    Ok(bytes)
}

/// What `bytes` carry, in one pass ([`Envelope`]), or why they are no JSON-RPC message.
// The refusal is the answer, sent as it is: once per refused request, never boxed for nothing.
#[allow(clippy::result_large_err)]
fn classify(bytes: &[u8]) -> Result<Message, Response> {
    match serde_json::from_slice::<Envelope<'_>>(bytes) {
        Ok(envelope) => match envelope.kind() {
            Ok(Kind::Request) if envelope.id_len() > MAX_REQUEST_ID_LEN => {
                Err(refusal::invalid_request_id(envelope.id_len()))
            }
            Ok(kind) => {
                let method = envelope.method.as_deref().filter(|_| kind == Kind::Request);
                Ok(Message {
                    initialize: method == Some("initialize") && opens_session(bytes),
                    tool: envelope
                        .tool
                        .filter(|_| method == Some("tools/call"))
                        .map(Cow::into_owned),
                    listen: method == Some("subscriptions/listen"),
                    id: envelope.id.flatten(),
                })
            }
            Err(problem) => Err(refusal::not_a_message(problem)),
        },
        Err(error) if error.is_syntax() || error.is_eof() => Err(refusal::not_json(&error)),
        Err(error) => Err(refusal::not_json_rpc(&error)),
    }
}

/// The whole body, or `413` as soon as it passes `max_bytes`.
async fn collect(body: Body, max_bytes: usize) -> Result<Bytes, Response> {
    match Limited::new(body, max_bytes).collect().await {
        // The usual body is one frame: handed on as it came, without a copy.
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(refusal::too_large(max_bytes)),
        // The client went away mid-body: nobody reads this answer.
        Err(_) => Err(refusal::unreadable()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_names_its_tool_as_it_is_read() {
        let tool = |body: &str| {
            classify(body.as_bytes())
                .ok()
                .and_then(|message| message.tool)
        };
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        assert_eq!(tool(call).as_deref(), Some("x"));
        let reordered = r#"{"params":{"arguments":{"name":"y"},"name":"x"},"method":"tools/call","id":1,"jsonrpc":"2.0"}"#;
        assert_eq!(tool(reordered).as_deref(), Some("x"));
        let escaped =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0078"}}"#;
        assert_eq!(tool(escaped).as_deref(), Some("x"));
        for other in [
            r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"name":"x"}}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
        ] {
            assert_eq!(tool(other), None, "{other}");
        }
    }
}
