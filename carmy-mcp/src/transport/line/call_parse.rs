//! The requests that do the work, `tools/call` and `resources/read`, parsed straight into
//! rmcp's types.
//!
//! rmcp parses a message as an untagged enum: the line is buffered into serde's `Content`, then
//! tried against each message kind and, for a request, against each of the twenty-odd request
//! types in turn, `tools/call` among the last. That search was an eighth of the server's time
//! per call. A call's or a read's line is read here in one pass over the bytes, into the very
//! value rmcp's parse builds; any line this path does not accept in full (another method, a
//! missing or malformed field, a `result` or `error` beside the `method`) goes to rmcp's parse
//! as before, so errors and rare messages behave exactly as they did. The request's `id` is also
//! kept as written (`ids.rs`), in the same pass.

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, JsonRpcVersion2_0, Request, RequestId, RequestParamsMeta,
};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::ids::ClientId;

/// The envelope of a JSON-RPC message, with `params` left unparsed.
#[derive(Deserialize)]
struct Envelope<'a> {
    /// Only `"2.0"` deserializes; nothing else is read from it.
    #[serde(rename = "jsonrpc")]
    _version: JsonRpcVersion2_0,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

/// Whether a key was there at all, whatever its value, `null` included.
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Self(true))
    }
}

/// The requests this path reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    /// `tools/call`.
    Call,
    /// `resources/read`.
    Read,
}

/// The id, the kind and the params of `line` when it is a request this path takes (an object,
/// `jsonrpc` `"2.0"`, an id, params that are an object, neither `result` nor `error`).
fn work_envelope(line: &[u8]) -> Option<(&RawValue, Work, &RawValue)> {
    // Objects only, here and for `params` below: serde also reads a struct from an array
    // (`["2.0", 1, "tools/call", {...}]`), which rmcp's parse refuses.
    if line.first() != Some(&b'{') {
        return None;
    }
    let envelope: Envelope<'_> = serde_json::from_slice(line).ok()?;
    let Envelope {
        _version: _,
        id: Some(id),
        method: Some(method),
        params: Some(params),
        result: Present(false),
        error: Present(false),
    } = envelope
    else {
        return None;
    };
    let work = match method {
        "tools/call" => Work::Call,
        "resources/read" => Work::Read,
        _ => return None,
    };
    params.get().starts_with('{').then_some((id, work, params))
}

/// The id of `line` as written, when it is a call or a read this path takes, without parsing
/// its params: how the reader picks the requests it hands to the call thread, which parses them.
pub(super) fn work_id(line: &[u8]) -> Option<ClientId> {
    let (id, _, _) = work_envelope(line)?;
    ClientId::new(id)
}

/// `line` as the `tools/call` or `resources/read` request rmcp would parse it into, with its id
/// as written, or `None` when the line is anything else or anything less, for rmcp's own parse
/// to handle.
pub(crate) fn work_request(line: &[u8]) -> Option<(ClientJsonRpcMessage, ClientId)> {
    let (id, work, params) = work_envelope(line)?;
    let client_id = ClientId::new(id)?;
    let id: RequestId = serde_json::from_str(id.get()).ok()?;
    Some((request(work, params, id)?, client_id))
}

/// The call or read in `line`, whose id the reader already read ([`work_id`]), under the id
/// `ours`; `None` when its params do not parse, for `parse_line` to answer as on the loop.
pub(super) fn work_request_as(line: &[u8], ours: i64) -> Option<ClientJsonRpcMessage> {
    let (_, work, params) = work_envelope(line)?;
    request(work, params, RequestId::Number(ours))
}

fn request(work: Work, params: &RawValue, id: RequestId) -> Option<ClientJsonRpcMessage> {
    let request = match work {
        Work::Call => ClientRequest::CallToolRequest(parsed(params)?),
        Work::Read => ClientRequest::ReadResourceRequest(parsed(params)?),
    };
    Some(ClientJsonRpcMessage::request(request, id))
}

/// `params` as rmcp's request of their type, with their `_meta` moved into the request's
/// extensions, where rmcp's parse puts it and handlers read it.
fn parsed<'a, M: Default, P>(params: &'a RawValue) -> Option<Request<M, P>>
where
    P: Deserialize<'a> + RequestParamsMeta,
{
    let mut params: P = serde_json::from_str(params.get()).ok()?;
    let meta = params.meta_mut().take();
    let mut request = Request::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(meta);
    }
    Some(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both parses, compared as the JSON they serialize back to (rmcp's types have no
    /// `PartialEq`), with the `_meta` rmcp keeps in the extensions.
    fn agree(line: &str) {
        let (fast, id) = work_request(line.as_bytes())
            .unwrap_or_else(|| panic!("the fast path does not take {line}"));
        let ids = super::super::ids::line_ids(line.as_bytes(), false).expect("ids");
        assert_eq!(ids.id.as_ref().map(ClientId::key), Some(id.key()), "{line}");
        let work_id = work_id(line.as_bytes()).expect("the request's id");
        assert_eq!(work_id.raw().get(), id.raw().get(), "{line}");
        let slow: ClientJsonRpcMessage = serde_json::from_str(line).expect("rmcp parses it");
        assert_eq!(
            serde_json::to_value(&fast).unwrap(),
            serde_json::to_value(&slow).unwrap(),
            "{line}"
        );
        // The call thread's parse is the same request under our id.
        let ours = work_request_as(line.as_bytes(), 42).expect("the call thread's parse");
        let mut ours = serde_json::to_value(&ours).unwrap();
        assert_eq!(ours["id"], 42, "{line}");
        ours["id"] = serde_json::to_value(&slow).unwrap()["id"].clone();
        assert_eq!(ours, serde_json::to_value(&slow).unwrap(), "{line}");
        let meta = |message: &ClientJsonRpcMessage| match message {
            ClientJsonRpcMessage::Request(request) => match &request.request {
                ClientRequest::CallToolRequest(call) => call
                    .extensions
                    .get::<rmcp::model::RequestMetaObject>()
                    .cloned(),
                ClientRequest::ReadResourceRequest(read) => read
                    .extensions
                    .get::<rmcp::model::RequestMetaObject>()
                    .cloned(),
                other => panic!("not a call or a read: {other:?}"),
            },
            other => panic!("not a request: {other:?}"),
        };
        assert_eq!(meta(&fast), meta(&slow), "{line}");
    }

    #[test]
    fn parses_calls_as_rmcp_does() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"mouse"}}}"#,
            r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"search"}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":\n\t {\"name\":\"t\"} }",
            r#"{"method":"tools/call","params":{"arguments":{"q":[1,{"x":null}]},"name":"t"},"id":-7,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":null,"_meta":{"progressToken":"p","carmy/request_id":"r-1"}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","_meta":null,"extra":true},"unknown":{}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","requestState":"s","inputResponses":{}}}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/call","params":{"name":"\u0074"}}"#,
            r#"{"jsonrpc":"2.0","id":7.0,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":"a\nb\u2028","method":"tools/call","params":{"name":"t"}}"#,
        ] {
            agree(line);
        }
    }

    #[test]
    fn parses_reads_as_rmcp_does() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"shop://products/sku-001"}}"#,
            r#"{"params":{"uri":"file:///a%20b/c.md"},"id":"r-1","method":"resources/read","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"x://y","_meta":{"progressToken":3}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"x://\u00e9","_meta":null,"extra":[1]},"unknown":{}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"x://y","requestState":"s","inputResponses":{}}}"#,
        ] {
            agree(line);
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read"}"#,
            r#"{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"x://y"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/templates/list","params":{}}"#,
        ] {
            assert!(work_request(line.as_bytes()).is_none(), "{line}");
        }
    }

    #[test]
    fn leaves_everything_else_to_rmcp() {
        for line in [
            // Other methods, notifications, responses.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            // A stray `result` or `error` beside the method: rmcp refuses the shape.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"error":null}"#,
            // Bad envelopes and params: rmcp's parse decides what they become.
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[null,"t"]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params": [null,"t"]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}"#,
            "not json",
            // A struct read from an array, positionally: not a JSON-RPC message.
            r#"["2.0",1,"tools/call",{"name":"t"}]"#,
        ] {
            assert!(work_request(line.as_bytes()).is_none(), "{line}");
        }
    }
}
