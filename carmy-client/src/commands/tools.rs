//! `list-tools` and `call-tool`.

// `--log-level` uses MCP logging, deprecated by SEP-2577 yet what servers still speak.
#![allow(deprecated)]

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    InputRequest, InputRequiredResult, InputResponses, LoggingLevel, RequestMetaObject,
    ServerResult, SetLevelRequestParams,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use super::{Run, str_of, to_json};
use crate::{
    args::{CallTool, LogLevel},
    exit::{Failure, Outcome},
    render::{Saver, Table, contents, one_line},
};

/// The idempotency key Carmy servers read from a call's `_meta` (carmy-mcp's
/// `META_REQUEST_ID`).
const REQUEST_ID_META: &str = "carmy/request_id";

/// How many `input_required` rounds a call may take before carmy gives up on it (rmcp's own
/// helper has a cap for the same reason: a server that keeps asking would loop forever).
const MAX_INPUT_ROUNDS: usize = 8;

pub(super) async fn list(run: &Run) -> Outcome {
    let peer = run.session.peer();
    let tools = super::pagination::every_page(run, "tools/list", |params| async move {
        let page = peer.list_tools(params).await?;
        Ok((page.tools, page.next_cursor))
    })
    .await?;
    let listed = json!({ "tools": tools });
    run.print(&listed, |listed| {
        let mut table = Table::new(&["TOOL", "TITLE", "DESCRIPTION"]);
        for tool in listed["tools"].as_array().into_iter().flatten() {
            let title = tool
                .get("title")
                .or_else(|| tool.pointer("/annotations/title"))
                .and_then(Value::as_str)
                .unwrap_or("");
            table.row(vec![
                str_of(tool, "name").to_owned(),
                title.to_owned(),
                one_line(str_of(tool, "description"), 72),
            ]);
        }
        Ok(table.render("(no tools)"))
    })
}

pub(super) async fn call(run: &Run, args: &CallTool) -> Outcome {
    let arguments = super::json_object(&args.arguments, "-a")?;
    let mut meta = RequestMetaObject::new();
    if let Some(request_id) = &args.request_id {
        meta.insert(
            REQUEST_ID_META.to_owned(),
            Value::String(request_id.clone()),
        );
    }
    if let Some(level) = args.log_level {
        let level = logging_level(level);
        if run.legacy() {
            // 2025-11-25: the level is the session's, set before the call. The logs are a
            // side show: a server that does not log (it says so in its capabilities, or it
            // refuses the request) still gets the call, with a warning.
            let offers_logging = run
                .session
                .peer()
                .peer_info()
                .is_some_and(|info| info.capabilities.logging.is_some());
            if offers_logging {
                let set = run
                    .session
                    .peer()
                    .set_level(SetLevelRequestParams::new(level));
                if let Err(Failure::Server(refused) | Failure::Timeout(refused)) =
                    run.send("logging/setLevel", set).await
                {
                    run.stderr.line(&format!(
                        "warning: --log-level: {refused}; calling without server logs"
                    ));
                }
            } else {
                run.stderr.line(
                    "warning: --log-level: the server does not offer logging; calling without it",
                );
            }
        } else {
            // 2026-07-28: the level travels with the request.
            meta.set_log_level(level);
        }
    }
    let mut params = CallToolRequestParams::new(args.name.clone()).with_arguments(arguments);
    for _ in 0..MAX_INPUT_ROUNDS {
        match send_call(run, params.clone(), meta.clone()).await? {
            ServerResult::CallToolResult(result) => return print_result(run, &result, args),
            ServerResult::InputRequiredResult(asked) => {
                let (responses, state) = answer(run, asked).await?;
                params.input_responses = responses;
                params.request_state = state;
            }
            other => {
                return Err(Failure::Server(format!(
                    "the server answered tools/call with something else: {}",
                    to_json(&other)
                )));
            }
        }
    }
    Err(Failure::Server(format!(
        "the server still asked for input after {MAX_INPUT_ROUNDS} rounds"
    )))
}

/// One `tools/call`. Ctrl-C, or `--timeout` of silence, sends `notifications/cancelled` for it
/// and waits until that is written, so the server stops the call before carmy exits.
async fn send_call(
    run: &Run,
    params: CallToolRequestParams,
    meta: RequestMetaObject,
) -> Result<ServerResult, Failure> {
    let peer = run.session.peer();
    let options = PeerRequestOptions::no_options().with_meta(meta);
    let handle = peer
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            options,
        )
        .await
        .map_err(Failure::from_service)?;
    let id = handle.id.clone();
    let (reason, failure) = tokio::select! {
        answer = handle.await_response() => {
            run.stderr.finish();
            return answer.map_err(Failure::from_service);
        }
        () = run.interrupt.wait() => {
            ("interrupted by the user (Ctrl-C)".to_owned(), Failure::Interrupted)
        }
        () = run.timeout.expired() => (
            format!("no answer within carmy's --timeout of {} s", run.timeout.limit().as_secs_f64()),
            run.timed_out("tools/call"),
        ),
    };
    run.stderr.finish();
    let cancelled = CancelledNotificationParam::new(Some(id), Some(reason));
    // A failure here means the connection is gone, and the call with it.
    let _ = peer.notify_cancelled(cancelled).await;
    Err(failure)
}

/// The answers to an `input_required` result (2026-07-28): questions are put to the user as
/// on 2025-11-25 (src/elicit.rs); roots are none; sampling is not something carmy does.
async fn answer(
    run: &Run,
    asked: InputRequiredResult,
) -> Result<(Option<InputResponses>, Option<String>), Failure> {
    let mut responses = InputResponses::new();
    for (key, request) in asked.input_requests.unwrap_or_default() {
        let response = match request {
            InputRequest::Elicitation(request) => {
                run.stderr.finish();
                to_json(&crate::elicit::answer(request.params).await)
            }
            InputRequest::ListRoots(_) => json!({ "roots": [] }),
            _ => {
                return Err(Failure::Server(
                    "the server asked for something carmy cannot give (sampling a language \
                     model, or a request this version does not know)"
                        .to_owned(),
                ));
            }
        };
        responses.insert(key, response);
    }
    Ok((
        (!responses.is_empty()).then_some(responses),
        asked.request_state,
    ))
}

fn print_result(run: &Run, result: &rmcp::model::CallToolResult, args: &CallTool) -> Outcome {
    let mut saver = Saver::new(args.output.as_deref());
    run.print(result, |result| {
        let result = to_json(result);
        let blocks = result["content"].as_array().cloned().unwrap_or_default();
        let mut shown = contents(&blocks, &mut saver)?;
        // Structured content with no block to show it (servers may send only that).
        if blocks.is_empty()
            && let Some(structured) = result.get("structuredContent")
        {
            shown = crate::escape::pretty(structured);
        }
        Ok(shown)
    })?;
    if result.is_error == Some(true) {
        return Err(Failure::Server(format!(
            "the tool `{}` reported an error",
            args.name
        )));
    }
    Ok(())
}

pub(crate) fn logging_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}
