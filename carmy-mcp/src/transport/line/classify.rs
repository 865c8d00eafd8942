//! What a line is: a message for rmcp, nothing to answer, or an error to answer at once
//! (JSON-RPC's parse error, invalid request, invalid params), decided without rmcp.

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ErrorCode, JsonRpcMessage};
use serde_json::{Value, json};

use super::{
    call_parse,
    ids::{ClientId, line_ids},
    scan::{leading_id, nests_deeper_than},
};

/// The nesting at which serde_json stops recursing and refuses a message.
const MAX_DEPTH: usize = 128;

/// A message for rmcp, with its ids as the client wrote them.
#[derive(Debug)]
pub(super) struct Incoming {
    pub(super) message: ClientJsonRpcMessage,
    /// The `id`: always there for a request.
    pub(super) id: Option<ClientId>,
    /// The request a `notifications/cancelled` names.
    pub(super) cancels: Option<ClientId>,
    /// The length of its line.
    pub(super) bytes: usize,
}

/// What to do with one line.
#[derive(Debug)]
pub(super) enum Parsed {
    /// Boxed: it may wait for room in `Flow`.
    Message(Box<Incoming>),
    /// Blank, or unusable but not to be answered (a notification or a response).
    Skip,
    Answer {
        id: Value,
        code: ErrorCode,
        message: String,
        data: Option<Value>,
    },
}

pub(super) fn parse_line(line: &[u8]) -> Parsed {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.trim_ascii();
    if line.is_empty() {
        return Parsed::Skip;
    }
    if let Some((message, id)) = call_parse::work_request(line) {
        return Parsed::Message(Box::new(Incoming {
            message,
            id: Some(id),
            cancels: None,
            bytes: line.len(),
        }));
    }
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => return with_ids(message, line),
        Err(error) => error,
    };
    if nests_deeper_than(line, MAX_DEPTH - 1) {
        // Possibly valid JSON, only as deep as serde_json refuses to recurse: refused without
        // parsing it again, naming the request when its id comes first.
        return Parsed::Answer {
            id: leading_id(line),
            code: ErrorCode::INVALID_REQUEST,
            message: format!("Invalid Request: JSON nested {MAX_DEPTH} levels deep or more"),
            data: Some(json!({ "max_depth": MAX_DEPTH - 1 })),
        };
    }
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(value) => value,
        Err(error) => {
            return Parsed::Answer {
                id: Value::Null,
                code: ErrorCode::PARSE_ERROR,
                message: format!("Parse error: {error}"),
                data: None,
            };
        }
    };
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Parsed::Answer {
                id: Value::Null,
                code: ErrorCode::INVALID_REQUEST,
                message: "Invalid Request: batches are not supported; send one message per line"
                    .into(),
                data: None,
            };
        }
        _ => {
            return Parsed::Answer {
                id: Value::Null,
                code: ErrorCode::INVALID_REQUEST,
                message: "Invalid Request: a JSON-RPC message is an object".into(),
                data: None,
            };
        }
    };
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number());
    let has_method = object.contains_key("method");
    let is_response = object.contains_key("result") || object.contains_key("error");
    if (has_method && !object.contains_key("id")) || (is_response && !has_method) {
        // JSON-RPC never answers a notification, and a response cannot be answered.
        tracing::debug!(%error, "ignoring an invalid notification or response");
        return Parsed::Skip;
    }
    if let (Some(id), Some(params)) = (id, object.get("params"))
        && has_method
        && !params.is_object()
    {
        // JSON-RPC allows positional params; MCP does not.
        return Parsed::Answer {
            id: id.clone(),
            code: ErrorCode::INVALID_PARAMS,
            message: "Invalid params: MCP params are an object".into(),
            data: Some(json!({ "field": "params" })),
        };
    }
    Parsed::Answer {
        id: id.cloned().unwrap_or(Value::Null),
        code: ErrorCode::INVALID_REQUEST,
        message: format!("Invalid Request: {error}"),
        data: None,
    }
}

/// `message`, parsed by rmcp from `line`, with the ids the client wrote.
fn with_ids(message: ClientJsonRpcMessage, line: &[u8]) -> Parsed {
    let is_request = matches!(message, JsonRpcMessage::Request(_));
    let cancellation = matches!(
        &message,
        JsonRpcMessage::Notification(notification)
            if matches!(notification.notification, ClientNotification::CancelledNotification(_))
    );
    match line_ids(line, cancellation) {
        Some(ids) if !is_request || ids.id.is_some() => Parsed::Message(Box::new(Incoming {
            message,
            id: ids.id,
            cancels: ids.cancels,
            bytes: line.len(),
        })),
        // rmcp read ids that this reading does not find as it did: refused, not guessed at.
        _ if is_request => Parsed::Answer {
            id: Value::Null,
            code: ErrorCode::INVALID_REQUEST,
            message: "Invalid Request: the request id cannot be read".into(),
            data: Some(json!({ "field": "id" })),
        },
        _ => Parsed::Skip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(parsed: Parsed) -> (Value, ErrorCode) {
        match parsed {
            Parsed::Answer { id, code, .. } => (id, code),
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn classifies_unusable_lines() {
        assert_eq!(
            answer(parse_line(b"{not json")),
            (Value::Null, ErrorCode::PARSE_ERROR)
        );
        assert_eq!(
            answer(parse_line(b"\xff\xfe")),
            (Value::Null, ErrorCode::PARSE_ERROR)
        );
        assert_eq!(
            answer(parse_line(b"[1,2]")),
            (Value::Null, ErrorCode::INVALID_REQUEST)
        );
        assert_eq!(
            answer(parse_line(b"42")),
            (Value::Null, ErrorCode::INVALID_REQUEST)
        );
        assert_eq!(
            answer(parse_line(br#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#)),
            (json!(5), ErrorCode::INVALID_REQUEST)
        );
        assert_eq!(
            answer(parse_line(br#"{"jsonrpc":"2.0","id":"a"}"#)),
            (json!("a"), ErrorCode::INVALID_REQUEST)
        );
        assert_eq!(
            answer(parse_line(
                br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[1]}"#
            )),
            (json!(6), ErrorCode::INVALID_PARAMS)
        );
        // Structs serde could read positionally from arrays are still refused.
        assert_eq!(
            answer(parse_line(
                br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[null,"lookup"]}"#
            )),
            (json!(7), ErrorCode::INVALID_PARAMS)
        );
        assert_eq!(
            answer(parse_line(br#"["2.0",8,"tools/call",{"name":"lookup"}]"#)),
            (Value::Null, ErrorCode::INVALID_REQUEST)
        );
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"1.0","method":"notifications/x"}"#),
            Parsed::Skip
        ));
        assert!(matches!(parse_line(b"  \r"), Parsed::Skip));
        assert!(matches!(
            parse_line(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r"),
            Parsed::Message(_)
        ));
    }
}
