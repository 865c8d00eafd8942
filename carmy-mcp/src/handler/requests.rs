//! Requests rmcp could not parse, and the params of `tools/call` that Carmy reads itself: each
//! answered with an error a client author can act on.

use rmcp::model::{
    CallToolRequestParams, CustomRequest, ErrorCode, ErrorData, ProtocolVersion, RequestMetaObject,
};
use serde_json::{Value, json};

use crate::mapping::META_REQUEST_ID;

/// The answer to a request rmcp handed over unparsed: rmcp does so with any request it could
/// not parse, including standard methods with bad params; left alone it would answer those
/// `-32601` with the method as the message. A method the negotiated revision does not have
/// (`initialize` on 2026-07-28, `server/discover` before it) is not found (`-32601`, which
/// streamable HTTP answers `404`), whatever its params.
pub(super) fn unparsed(request: CustomRequest, version: Option<&ProtocolVersion>) -> ErrorData {
    let CustomRequest { method, params, .. } = request;
    if let Err(not_found) = in_revision(&method, version) {
        return not_found;
    }
    if method == "tools/call" {
        return call_params_error(params.as_ref());
    }
    if matches!(
        method.as_str(),
        "tasks/get" | "tasks/update" | "tasks/cancel"
    ) {
        return task_params_error(&method, params.as_ref());
    }
    ErrorData::invalid_params(
        format!("invalid params for `{method}`"),
        Some(json!({ "method": method })),
    )
}

/// `-32601` for `method` when the negotiated revision does not have it: rmcp parses and hands
/// over some requests whatever the revision (`logging/setLevel` on 2026-07-28 over stdio).
pub(super) fn in_revision(
    method: &str,
    version: Option<&ProtocolVersion>,
) -> Result<(), ErrorData> {
    let stateless = version.is_some_and(|version| *version >= ProtocolVersion::V_2026_07_28);
    let known = STANDARD_METHODS
        .iter()
        .find(|(name, _)| *name == method)
        .is_some_and(|(_, revisions)| revisions.has(stateless));
    if known {
        return Ok(());
    }
    Err(ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: `{method}`"),
        Some(json!({ "method": method })),
    ))
}

/// Which revisions have a method.
#[derive(Clone, Copy)]
enum Revisions {
    Every,
    /// Removed by 2026-07-28, which has no session to initialize, ping or set a level for.
    UpTo2025,
    /// Added by 2026-07-28.
    From2026,
}

impl Revisions {
    fn has(self, stateless: bool) -> bool {
        match self {
            Revisions::Every => true,
            Revisions::UpTo2025 => !stateless,
            Revisions::From2026 => stateless,
        }
    }
}

/// Client request methods rmcp knows, and the revisions that have them; one of these in
/// `on_custom_request` had params it could not parse.
const STANDARD_METHODS: &[(&str, Revisions)] = &[
    ("initialize", Revisions::UpTo2025),
    ("ping", Revisions::UpTo2025),
    ("server/discover", Revisions::From2026),
    ("completion/complete", Revisions::Every),
    ("logging/setLevel", Revisions::UpTo2025),
    ("prompts/get", Revisions::Every),
    ("prompts/list", Revisions::Every),
    ("resources/list", Revisions::Every),
    ("resources/templates/list", Revisions::Every),
    ("resources/read", Revisions::Every),
    ("resources/subscribe", Revisions::UpTo2025),
    ("resources/unsubscribe", Revisions::UpTo2025),
    ("subscriptions/listen", Revisions::From2026),
    ("tools/call", Revisions::Every),
    ("tools/list", Revisions::Every),
    ("tasks/get", Revisions::Every),
    ("tasks/update", Revisions::Every),
    ("tasks/cancel", Revisions::Every),
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

/// Why `tasks/get`, `tasks/update` or `tasks/cancel` params did not parse.
fn task_params_error(method: &str, params: Option<&Value>) -> ErrorData {
    let problem = |message: String, field: &str| {
        ErrorData::invalid_params(message, Some(json!({ "field": field })))
    };
    let usage = if method == "tasks/update" {
        "{\"taskId\": <task id>, \"inputResponses\": {...}}"
    } else {
        "{\"taskId\": <task id>}"
    };
    let Some(object) = params.and_then(Value::as_object) else {
        return problem(format!("`{method}` needs params: {usage}"), "params");
    };
    match object.get("taskId") {
        Some(Value::String(_)) => {}
        None => {
            return problem(
                format!("`{method}` params need `taskId`: {usage}"),
                "taskId",
            );
        }
        Some(other) => {
            return problem(
                format!("`taskId` must be a string, got {}", describe(other)),
                "taskId",
            );
        }
    }
    match object.get("inputResponses") {
        Some(Value::Object(_)) => {}
        _ if method != "tasks/update" => {}
        None => {
            return problem(
                "`tasks/update` params need `inputResponses`, the answers by key".into(),
                "inputResponses",
            );
        }
        Some(other) => {
            return problem(
                format!(
                    "`inputResponses` must be an object, got {}",
                    describe(other)
                ),
                "inputResponses",
            );
        }
    }
    problem(format!("invalid `{method}` params: {usage}"), "params")
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
