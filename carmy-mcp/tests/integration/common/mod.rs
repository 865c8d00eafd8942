//! Shared by the integration tests: the testbed in process, rmcp clients in both lifecycles,
//! and a raw line-level view of the testbed binary's stdio.
#![allow(dead_code, unreachable_pub)]

#[path = "../../../testbed/tools.rs"]
pub mod tools;

use std::{
    process::Stdio,
    sync::{Arc, atomic::AtomicU64},
    time::Duration,
};

use carmy_core::{Context, Runtime};
use carmy_mcp::{McpServer, ServeError};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ErrorData,
        MetaObject, ProgressNotificationParam, ProtocolVersion, RequestMetaObject, ServerResult,
    },
    service::{NotificationContext, PeerRequestOptions, RunningService, ServiceError},
    transport::IntoTransport,
};
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, ChildStdin, ChildStdout},
    sync::mpsc,
    task::JoinHandle,
};
use tools::ProbeEvent;

/// The two ways a session starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// `initialize`, protocol 2025-11-25.
    Initialize,
    /// No `initialize`: `server/discover`, then per-request `_meta`, protocol 2026-07-28.
    Discover,
}

pub const LIFECYCLES: [Lifecycle; 2] = [Lifecycle::Initialize, Lifecycle::Discover];

/// Bounds every wait on the other side, so a broken server fails a test instead of hanging it.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// An rmcp client that hands progress notifications to the test.
#[derive(Clone)]
pub struct Client {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

pub type Session = RunningService<RoleClient, Client>;

/// Starts an rmcp client session on `transport`.
pub async fn connect<T, E, A>(
    lifecycle: Lifecycle,
    transport: T,
) -> (Session, mpsc::UnboundedReceiver<ProgressNotificationParam>)
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let (progress, progress_rx) = mpsc::unbounded_channel();
    let session = connect_as(Client { progress }, lifecycle, transport).await;
    (session, progress_rx)
}

/// Starts a session of the rmcp client `handler` on `transport`, in `lifecycle`.
pub async fn connect_as<H, T, E, A>(
    handler: H,
    lifecycle: Lifecycle,
    transport: T,
) -> RunningService<RoleClient, H>
where
    H: ClientHandler,
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    match lifecycle {
        Lifecycle::Initialize => handler.serve(transport).await.expect("initialize"),
        Lifecycle::Discover => handler
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("discover"),
    }
}

/// The testbed served in process over a duplex stream, and a client connected to it.
pub struct InProcess {
    pub client: Session,
    pub progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    pub runtime: Runtime,
    pub order_runs: Arc<AtomicU64>,
    pub probe: mpsc::UnboundedReceiver<ProbeEvent>,
    pub server: JoinHandle<Result<(), ServeError>>,
}

pub async fn in_process(lifecycle: Lifecycle, context: Context) -> InProcess {
    let (probe_tx, probe) = mpsc::unbounded_channel();
    let testbed = tools::testbed(probe_tx);
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    let server = McpServer::new(testbed.runtime.clone()).context(context);
    let server = tokio::spawn(server.serve_io(read, write));
    let (client, progress) = connect(lifecycle, client_io).await;
    InProcess {
        client,
        progress,
        runtime: testbed.runtime,
        order_runs: testbed.order_runs,
        probe,
        server,
    }
}

/// The request for `tools/call name(arguments)`, `_meta` included.
pub fn call_request(name: &str, arguments: Value) -> ClientRequest {
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(arguments) = arguments {
        params = params.with_arguments(arguments);
    }
    ClientRequest::CallToolRequest(CallToolRequest::new(params))
}

pub fn with_meta(meta: Value) -> PeerRequestOptions {
    let Value::Object(meta) = meta else {
        panic!("_meta is an object")
    };
    PeerRequestOptions::no_options().with_meta(RequestMetaObject(MetaObject(meta)))
}

/// `tools/call` with optional request `_meta`; the result, or the JSON-RPC error.
pub async fn call_with(
    session: &Session,
    name: &str,
    arguments: Value,
    options: PeerRequestOptions,
) -> Result<CallToolResult, ErrorData> {
    let handle = session
        .peer()
        .send_request_with_option(call_request(name, arguments), options)
        .await
        .expect("request sent");
    match handle.await_response().await {
        Ok(ServerResult::CallToolResult(result)) => Ok(result),
        Ok(other) => panic!("expected a CallToolResult, got {other:?}"),
        Err(ServiceError::McpError(error)) => Err(error),
        Err(other) => panic!("tools/call failed: {other}"),
    }
}

pub async fn call(session: &Session, name: &str, arguments: Value) -> CallToolResult {
    call_with(session, name, arguments, PeerRequestOptions::no_options())
        .await
        .unwrap_or_else(|error| panic!("`{name}` got a JSON-RPC error: {error:?}"))
}

/// The first content block, parsed as JSON.
pub fn text_json(result: &CallToolResult) -> Value {
    let text = result
        .content
        .first()
        .and_then(|block| block.as_text())
        .unwrap_or_else(|| panic!("no text content in {result:?}"));
    serde_json::from_str(&text.text).unwrap_or_else(|error| panic!("not JSON: {error}: {text:?}"))
}

/// A `_meta` entry of a result.
pub fn meta<'a>(result: &'a CallToolResult, key: &str) -> &'a Value {
    result
        .meta
        .as_ref()
        .and_then(|meta| meta.get(key))
        .unwrap_or_else(|| panic!("no _meta[{key:?}] in {result:?}"))
}

/// Waits for the next probe event.
pub async fn next_probe(probe: &mut mpsc::UnboundedReceiver<ProbeEvent>) -> ProbeEvent {
    tokio::time::timeout(PATIENCE, probe.recv())
        .await
        .expect("the slow tool reported in time")
        .expect("the probe is open")
}

/// The testbed binary.
pub fn testbed_command(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_carmy-mcp-testbed"));
    command.args(args).kill_on_drop(true);
    command
}

/// The testbed binary, seen one stdio line at a time.
pub struct RawChild {
    child: Child,
    stdin: ChildStdin,
    stdout: tokio::io::Lines<BufReader<ChildStdout>>,
}

impl RawChild {
    pub fn spawn(args: &[&str]) -> Self {
        let mut child = testbed_command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the testbed starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// Writes `bytes` as they are (add the newline yourself).
    pub async fn write(&mut self, bytes: &[u8]) {
        self.stdin
            .write_all(bytes)
            .await
            .expect("write to the testbed");
        self.stdin.flush().await.expect("flush to the testbed");
    }

    pub async fn send(&mut self, message: &Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.write(&line).await;
    }

    /// The next line the server writes, as JSON.
    pub async fn receive(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("the testbed answered in time")
            .expect("read from the testbed")
            .expect("the testbed's stdout is open");
        serde_json::from_str(&line)
            .unwrap_or_else(|error| panic!("stdout carried non-JSON: {error}: {line}"))
    }

    /// `initialize` and `notifications/initialized`, protocol 2025-11-25.
    pub async fn initialize(&mut self) {
        self.send(&serde_json::json!({
            "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": "raw", "version": "0" }
            }
        }))
        .await;
        let answer = self.receive().await;
        assert_eq!(answer["id"], "init", "{answer}");
        assert!(
            answer["result"]["capabilities"]["tools"].is_object(),
            "{answer}"
        );
        self.send(&serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
    }

    /// Closes stdin and waits for the server to exit.
    pub async fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin);
        tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("the testbed exits once stdin closes")
            .expect("wait for the testbed")
    }
}
