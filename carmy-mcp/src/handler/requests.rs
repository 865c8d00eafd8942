//! Requests rmcp could not parse, and the params of `tools/call` that Carmy reads itself: each
//! answered with an error a client author can act on.

use rmcp::model::{CallToolRequestParams, CustomRequest, ErrorCode, ErrorData, RequestMetaObject};
use serde_json::{Value, json};

use crate::mapping::META_REQUEST_ID;

/// The answer to a request rmcp handed over unparsed: rmcp does so with any request it could
/// not parse, including standard methods with bad params; left alone it would answer those
/// `-32601` with the method as the message.
pub(super) fn unparsed(request: CustomRequest) -> ErrorData {
    let CustomRequest { method, params, .. } = request;
    if method == "tools/call" {
        return call_params_error(params.as_ref());
    }
    if STANDARD_METHODS.contains(&method.as_str()) {
        return ErrorData::invalid_params(
            format!("invalid params for `{method}`"),
            Some(json!({ "method": method })),
        );
    }
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: `{method}`"),
        Some(json!({ "method": method })),
    )
}

/// Client request methods rmcp knows; one of these in `on_custom_request` had params it could
/// not parse.
const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

/// `_meta["carmy/request_id"]`: absent, or a non-empty string.
pub(super) fn request_id(meta: &RequestMetaObject) -> Result<Option<String>, ErrorData> {
    match meta.get(META_REQUEST_ID) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if !id.is_empty() => Ok(Some(id.clone())),
        Some(other) => Err(ErrorData::invalid_params(
            format!(
                "`_meta[\"{META_REQUEST_ID}\"]` must be a non-empty string, got {}",
                describe(other)
            ),
            Some(json!({ "field": format!("_meta/{META_REQUEST_ID}") })),
        )),
    }
}

/// Why `tools/call` params did not parse, in words a client author can act on.
fn call_params_error(params: Option<&Value>) -> ErrorData {
    let problem = |message: String, field: &str| {
        ErrorData::invalid_params(message, Some(json!({ "field": field })))
    };
    let Some(params) = params.filter(|params| !params.is_null()) else {
        return problem(
            "`tools/call` needs params: {\"name\": <tool name>, \"arguments\": {...}}".into(),
            "params",
        );
    };
    let Some(object) = params.as_object() else {
        return problem(
            format!(
                "`tools/call` params must be an object, got {}",
                describe(params)
            ),
            "params",
        );
    };
    match object.get("name") {
        None => {
            return problem(
                "`tools/call` params need `name`, the tool to call".into(),
                "name",
            );
        }
        Some(Value::String(_)) => {}
        Some(other) => {
            return problem(
                format!("`name` must be a string, got {}", describe(other)),
                "name",
            );
        }
    }
    if let Some(arguments) = object.get("arguments")
        && !(arguments.is_object() || arguments.is_null())
    {
        return problem(
            format!("`arguments` must be an object, got {}", describe(arguments)),
            "arguments",
        );
    }
    match serde_json::from_value::<CallToolRequestParams>(params.clone()) {
        Err(error) => problem(format!("invalid `tools/call` params: {error}"), "params"),
        // Parsed now, so it was not the params; say so rather than guess.
        Ok(_) => ErrorData::invalid_params("invalid `tools/call` request", None),
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
