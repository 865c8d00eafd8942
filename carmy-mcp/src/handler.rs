//! The rmcp `ServerHandler`: `tools/list`, `tools/call`, cancellation and the requests rmcp
//! could not parse. Lifecycles (`initialize`, `server/discover`, `ping`) are rmcp's.

use carmy_core::{Outcome, Request};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelledNotificationParam, CustomRequest,
        CustomResult, ListToolsResult, PaginatedRequestParams, RequestMetaObject, ServerConfig,
        Tool,
    },
    service::{NotificationContext, RequestContext},
};
use serde_json::{Value, json};

use crate::{
    McpServer,
    confirm::{ClientConfirmation, Gate},
    listing::Listing,
    mapping::{self, META_REQUEST_ID},
    progress,
    scope::CallScope,
};

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        (*self.info).clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The whole catalog is one page, built in `McpServer::new`; on Carmy's line transport the
        // transport writes the tools from the page it keeps serialized.
        Ok(if self.transport_writes_tools {
            Listing::result_without_tools()
        } else {
            self.listing.result()
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listing.get(name).cloned()
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let request_id = request_id(&context.meta)?;
        let name = params.name;
        let arguments = params.arguments.map_or(Value::Null, Value::Object);
        // On HTTP, the authenticator's context for this request, and its disconnect and deadline.
        let scope = CallScope::of(self, &context);
        // The context is the host's; nothing from the request (arguments, `_meta`) adds to it,
        // except `confirm:<tool>` for this call once the user approved it through the client.
        let mut call_context = scope.context.clone();
        // The rare paths (asking the user, forwarding progress) are boxed: the future of every
        // call is as large as its largest await, and rmcp moves it into a task per request.
        if let Some(confirm) = self
            .confirm
            .as_ref()
            .filter(|_| ClientConfirmation::may_ask(&self.runtime, &call_context, &name).is_some())
        {
            let gate = confirm.gate(
                &self.runtime,
                call_context,
                &name,
                &arguments,
                params.input_responses,
                params.request_state,
                &context,
            );
            match Box::pin(gate).await {
                Gate::Proceed(approved) => call_context = approved,
                Gate::Answer(response) => return Ok(response),
            }
        }
        // rmcp cancels `ct` on `notifications/cancelled`; the runtime then drops the tool.
        let mut request = Request::new(name.as_ref(), arguments)
            .context(call_context)
            .cancellation(scope.cancellation.clone());
        if let Some(request_id) = request_id {
            request = request.request_id(request_id);
        }
        let outcome: Outcome = match context.meta.get_progress_token() {
            Some(token) => {
                Box::pin(progress::with_progress(&context.peer, token, |reporter| {
                    self.runtime.execute(request.progress(reporter))
                }))
                .await
            }
            None => self.runtime.execute(request).await,
        };
        let entry = self.runtime.catalog().get(&name);
        mapping::call_result(entry, outcome).map(CallToolResponse::from)
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        // rmcp has already cancelled the request's token, which stops the execution.
        tracing::debug!(
            request_id = ?notification.request_id,
            reason = notification.reason.as_deref().unwrap_or(""),
            "the client cancelled a request"
        );
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // rmcp hands over any request it could not parse, including standard methods with bad
        // params; left alone it would answer those `-32601` with the method as the message.
        let CustomRequest { method, params, .. } = request;
        if method == "tools/call" {
            return Err(call_params_error(params.as_ref()));
        }
        if STANDARD_METHODS.contains(&method.as_str()) {
            return Err(ErrorData::invalid_params(
                format!("invalid params for `{method}`"),
                Some(json!({ "method": method })),
            ));
        }
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: `{method}`"),
            Some(json!({ "method": method })),
        ))
    }
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
fn request_id(meta: &RequestMetaObject) -> Result<Option<String>, ErrorData> {
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
