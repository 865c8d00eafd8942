//! Protocol logging over MCP: a tool's `tracing` events reach the client that called it as
//! `notifications/message`, from the level it chose (for the session up to 2025-11-25, per
//! request on 2026-07-28), before the answer, bounded, never carrying the arguments; at debug,
//! the runtime's own line for each execution too.
#![allow(deprecated)] // rmcp marks MCP's logging types deprecated (SEP-2577).

use std::sync::{Arc, Mutex};

use carmy_core::{AgentError, Carmy, Effect, Invocation, Tool, ToolSpec};
use carmy_mcp::{ClientLogLayer, McpServer};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, ClientRequest, LoggingLevel, LoggingMessageNotificationParam,
        MetaObject, ProtocolVersion, RequestMetaObject, ServerResult, SetLevelRequestParams,
    },
    service::{NotificationContext, PeerRequestOptions, RunningService},
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tracing_subscriber::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Chatter {
    /// How many errors to log.
    #[serde(default)]
    errors: u32,
    /// Never logged.
    secret: Option<String>,
}

/// Logs one event at each level, then `errors` more errors.
struct Chatty;
impl Tool for Chatty {
    type Input = Chatter;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("chatty", Effect::None);
    async fn run(&self, input: Chatter, _: Invocation) -> Result<String, AgentError> {
        tracing::debug!("a detail");
        tracing::info!(step = 2, "halfway");
        tracing::warn!("running low");
        tracing::error!(reason = "no stock", "failed once");
        for n in 0..input.errors {
            tracing::error!(n, "again");
        }
        let _ = input.secret;
        Ok("done".into())
    }
}

/// Logs nothing.
struct Quiet;
impl Tool for Quiet {
    type Input = carmy_core::NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("quiet", Effect::None);
    async fn run(&self, _: carmy_core::NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok("shh".into())
    }
}

/// Keeps every log message, and notes when the answer came relative to them.
#[derive(Clone, Default)]
struct Listener {
    messages: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
}

impl ClientHandler for Listener {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.messages.lock().unwrap().push(params);
    }
}

impl Listener {
    fn take(&self) -> Vec<(LoggingLevel, Value)> {
        std::mem::take(&mut *self.messages.lock().unwrap())
            .into_iter()
            .map(|message| (message.level, message.data))
            .collect()
    }
}

async fn session(modern: bool) -> (RunningService<RoleClient, Listener>, Listener) {
    let runtime = Carmy::new()
        .tool(Chatty)
        .tool(Quiet)
        .build()
        .expect("catalog");
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(runtime).serve_io(read, write));
    let listener = Listener::default();
    let client = if modern {
        listener
            .clone()
            .serve_with_lifecycle(
                client_io,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("discover")
    } else {
        listener.clone().serve(client_io).await.expect("initialize")
    };
    (client, listener)
}

async fn call(
    client: &RunningService<RoleClient, Listener>,
    arguments: Value,
    meta: Option<Value>,
) {
    call_tool(client, "chatty", arguments, meta).await;
}

async fn call_tool(
    client: &RunningService<RoleClient, Listener>,
    tool: &'static str,
    arguments: Value,
    meta: Option<Value>,
) {
    let mut params = CallToolRequestParams::new(tool);
    params = params.with_arguments(arguments.as_object().cloned().unwrap());
    let mut options = PeerRequestOptions::no_options();
    if let Some(Value::Object(meta)) = meta {
        options = options.with_meta(RequestMetaObject(MetaObject(meta)));
    }
    let handle = client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)),
            options,
        )
        .await
        .expect("sent");
    match handle.await_response().await {
        Ok(ServerResult::CallToolResult(result)) => assert_eq!(result.is_error, Some(false)),
        other => panic!("{other:?}"),
    }
}

fn levels(messages: &[(LoggingLevel, Value)]) -> Vec<LoggingLevel> {
    messages.iter().map(|(level, _)| *level).collect()
}

#[tokio::test]
async fn a_session_gets_the_levels_it_set_and_nothing_before() {
    let _subscriber = tracing_subscriber::registry()
        .with(ClientLogLayer)
        .set_default();
    let (client, listener) = session(false).await;
    call(&client, json!({}), None).await;
    assert!(
        listener.take().is_empty(),
        "nothing before logging/setLevel"
    );
    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .expect("setLevel");
    call(&client, json!({ "secret": "hunter2" }), None).await;
    let messages = listener.take();
    assert_eq!(
        levels(&messages),
        [LoggingLevel::Warning, LoggingLevel::Error]
    );
    assert_eq!(messages[0].1["message"], "running low");
    assert_eq!(messages[1].1["reason"], "no stock");
    assert!(
        !format!("{messages:?}").contains("hunter2"),
        "arguments never travel"
    );
    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .expect("setLevel");
    call(&client, json!({}), None).await;
    let messages = listener.take();
    assert_eq!(
        levels(&messages),
        [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            // The runtime's own line, last: the execution ended.
            LoggingLevel::Debug,
        ]
    );
    assert_eq!(messages[4].1["message"], "execution ended");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn at_debug_a_tool_that_logs_nothing_still_says_how_it_ended() {
    let _subscriber = tracing_subscriber::registry()
        .with(ClientLogLayer)
        .set_default();
    let (client, listener) = session(false).await;
    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .expect("setLevel");
    call_tool(&client, "quiet", json!({}), None).await;
    assert!(listener.take().is_empty(), "nothing above debug");
    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .expect("setLevel");
    call_tool(&client, "quiet", json!({}), None).await;
    let messages = listener.take();
    assert_eq!(levels(&messages), [LoggingLevel::Debug], "{messages:?}");
    let line = &messages[0].1;
    assert_eq!(line["message"], "execution ended");
    assert_eq!(line["kind"], "tool");
    assert_eq!(line["target"], "quiet");
    assert_eq!(line["status"], "succeeded");
    assert!(line["duration_ms"].as_f64().is_some(), "{line}");
    assert!(
        line["execution_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("exec_")),
        "{line}"
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn on_2026_07_28_the_level_travels_with_each_request() {
    let _subscriber = tracing_subscriber::registry()
        .with(ClientLogLayer)
        .set_default();
    let (client, listener) = session(true).await;
    call(&client, json!({}), None).await;
    assert!(listener.take().is_empty(), "no level, no log");
    call(
        &client,
        json!({}),
        Some(json!({ "io.modelcontextprotocol/logLevel": "info" })),
    )
    .await;
    assert_eq!(
        levels(&listener.take()),
        [
            LoggingLevel::Info,
            LoggingLevel::Warning,
            LoggingLevel::Error
        ]
    );
    // That revision has no session level: `logging/setLevel` is not found, and sets nothing.
    let refused = client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .expect_err("no logging/setLevel on 2026-07-28");
    assert!(refused.to_string().contains("-32601"), "{refused}");
    call(&client, json!({}), None).await;
    assert!(listener.take().is_empty(), "still no level, no log");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_chatty_request_is_bounded_and_says_how_much_it_dropped() {
    let _subscriber = tracing_subscriber::registry()
        .with(ClientLogLayer)
        .set_default();
    let (client, listener) = session(false).await;
    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .expect("setLevel");
    call(&client, json!({ "errors": 5000 }), None).await;
    let messages = listener.take();
    assert!(messages.len() <= 80, "{} messages", messages.len());
    let (level, note) = messages.last().unwrap();
    assert_eq!(
        *level,
        LoggingLevel::Error,
        "as severe as the client asked for"
    );
    let note = note["message"].as_str().unwrap();
    assert!(
        note.contains("log messages of this request were dropped"),
        "{note}"
    );
    client.cancel().await.expect("close");
}
