//! # carmy-mcp
//!
//! Serves a Carmy [`Runtime`] over the [Model Context Protocol](https://modelcontextprotocol.io)
//! with the official Rust SDK, [`rmcp`]: on stdio with [`McpServer::serve_stdio`], on any byte
//! stream with [`McpServer::serve_io`], and on any other rmcp transport through
//! [`rmcp::ServiceExt::serve`], since [`McpServer`] is an rmcp `ServerHandler`.
//!
//! ```no_run
//! use carmy_core::{AgentError, Carmy, Context, Effect, Invocation, NoInput, Tool, ToolSpec};
//! use carmy_mcp::McpServer;
//!
//! struct Version;
//! impl Tool for Version {
//!     type Input = NoInput;
//!     type Output = String;
//!     const SPEC: ToolSpec = ToolSpec::new("version", Effect::None).description("The version.");
//!     async fn run(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
//!         Ok(env!("CARGO_PKG_VERSION").into())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let runtime = Carmy::new().tool(Version).build()?;
//!     McpServer::new(runtime)
//!         // Who is calling and what they may do: decided here, by the host, never by a client.
//!         .context(Context::new().with_principal("local-user"))
//!         .server_info("version-server", env!("CARGO_PKG_VERSION"))
//!         .serve_stdio()
//!         .await?;
//!     Ok(())
//! }
//! ```
//!
//! ## What a client sees
//!
//! | Carmy | MCP |
//! |---|---|
//! | effect `none` or `read` | `annotations.readOnlyHint: true` |
//! | effect `destructive` | `annotations.destructiveHint: true` |
//! | effect `external_write` | `annotations.openWorldHint: true` |
//! | `idempotent` | `annotations.idempotentHint` |
//! | effect, confirmation, parallel safety | `_meta["carmy/effect"]`, `_meta["carmy/confirmation"]`, `_meta["carmy/parallel_safe"]` |
//! | a tool returning objects | `outputSchema`; results in `structuredContent` plus the same JSON as text |
//! | a tool returning anything else | no `outputSchema`; results as JSON text only |
//! | an [`AgentError`](carmy_core::AgentError) | `isError: true`, `{"error": {...}}` as JSON text and the error object in `_meta["carmy/error"]`; never `structuredContent` |
//! | an unknown tool | JSON-RPC error `-32602`, the `{"error": {...}}` envelope as `data` |
//! | `_meta["carmy/request_id"]` on `tools/call` | the idempotency key: a retry with it gets the first outcome, replayed |
//! | execution id and status | `_meta["carmy/execution_id"]`, `_meta["carmy/status"]` on every result |
//! | `notifications/cancelled` | the execution is cancelled: the tool's future is dropped, its status is `cancelled` |
//! | a progress token on `tools/call` | the tool's `Context::progress` reports become `notifications/progress` |
//!
//! All four annotation hints are always stated, `false` included: MCP reads an absent
//! `destructiveHint` or `openWorldHint` as `true`. Annotations are hints to clients; the runtime's
//! policy (confirmation grants, idempotency, parallel safety) is what is enforced.
//!
//! `tools/list` is computed once, in [`McpServer::new`], and answered as one page that clients
//! may cache for 60 s (`ttlMs`). Schemas are the runtime's, exactly as it validates arguments;
//! [`check_portable`] holds a catalog to the profile every popular client accepts.
//!
//! Both lifecycles are served: `initialize` (protocol 2025-11-25 and older) and the
//! initialize-less 2026-07-28 (`server/discover`, per-request `_meta`, `resultType`).
//!
//! ## Bad input
//! Every request gets an answer. `tools/call` with missing or malformed params is answered
//! `-32602` saying what is wrong; on stdio and [`serve_io`](McpServer::serve_io) streams, a line
//! that is not JSON is answered `-32700` (`id: null`) and a line longer than
//! [`max_line_bytes`](McpServer::max_line_bytes) `-32600`, and the server goes on serving (see
//! [`LineTransport`]). Arguments that do not match the schema are a tool error with code
//! `INVALID_ARGUMENTS` and the JSON pointer of each bad field.
//!
//! Nothing is ever printed to stdout but protocol messages; logs go through `tracing`, which
//! a binary points at stderr.

mod call_parse;
mod confirm;
mod handler;
mod listing;
mod mapping;
mod progress;
mod transport;
// Network transports (issue 8): HTTP behind the `http` feature, Unix sockets always on Unix.
#[cfg(feature = "http")]
mod auth;
#[cfg(feature = "http")]
mod http;
mod scope;
mod shutdown;
#[cfg(unix)]
mod unix;

use std::sync::Arc;

use carmy_core::{Context, Runtime};
use rmcp::{
    ServiceExt,
    model::{Implementation, ServerCapabilities, ServerConfig},
    service::ServerInitializeError,
};
use tokio::io::{AsyncRead, AsyncWrite};

/// The portable-profile checker, re-exported from carmy-core where the profile is defined.
pub use carmy_core::check_portable;
pub use confirm::{CONFIRM_FIELD, CONFIRM_INPUT_KEY};
pub use mapping::{
    META_CONFIRMATION, META_EFFECT, META_ERROR, META_EXECUTION_ID, META_PARALLEL_SAFE,
    META_REQUEST_ID, META_STATUS,
};
pub use rmcp;
pub use transport::{
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_OUTBOX_BYTES, LineTransport,
};

// Network transports.
#[cfg(feature = "http")]
pub use self::http::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT, HEALTH_PATH, HttpError, HttpServer, MCP_PATH,
};
#[cfg(feature = "http")]
pub use ::http::request::Parts as RequestParts;
#[cfg(feature = "http")]
pub use auth::{Authenticator, BearerTokens, MIN_TOKEN_LEN, TokenFileError, Unauthorized};
#[cfg(feature = "http")]
pub use axum;
pub use shutdown::{DEFAULT_GRACE_PERIOD, signal as shutdown_signal};
#[cfg(unix)]
pub use unix::UnixSocket;

/// A Carmy runtime as an MCP server. Cheap to clone: one per connection is fine.
///
/// It is an rmcp `ServerHandler`, so any rmcp transport serves it:
///
/// ```no_run
/// # async fn demo(server: carmy_mcp::McpServer) -> Result<(), Box<dyn std::error::Error>> {
/// use carmy_mcp::rmcp::ServiceExt;
///
/// let (client_end, server_end) = tokio::io::duplex(64 * 1024);
/// let running = server.serve(server_end).await?;
/// # drop(client_end);
/// running.waiting().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
#[must_use]
pub struct McpServer {
    pub(crate) runtime: Runtime,
    pub(crate) context: Context,
    pub(crate) info: Arc<ServerConfig>,
    pub(crate) listing: Arc<listing::Listing>,
    /// Whether the transport writes the tools of `tools/list` results from the listing's page
    /// (Carmy's line transport), so the handler leaves them out.
    pub(crate) transport_writes_tools: bool,
    /// Set by [`McpServer::confirm_via_client`]; shared by every clone.
    pub(crate) confirm: Option<Arc<confirm::ClientConfirmation>>,
    max_line_bytes: usize,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("server_info", &self.info.server_info)
            .field("runtime", &self.runtime)
            .field("context", &self.context)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("confirm_via_client", &self.confirm.is_some())
            .finish()
    }
}

impl McpServer {
    /// Serves `runtime`'s tools, anonymously and without grants until [`context`] says
    /// otherwise. The tool list is built here, once.
    ///
    /// [`context`]: McpServer::context
    pub fn new(runtime: Runtime) -> Self {
        let listing = Arc::new(listing::Listing::new(runtime.catalog()));
        let info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ));
        Self {
            runtime,
            context: Context::new(),
            info: Arc::new(info),
            listing,
            transport_writes_tools: false,
            confirm: None,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }

    /// The trusted context every call runs under: principal, grants, extensions. It is the host's
    /// decision alone; tool arguments and request `_meta` never add to it.
    pub fn context(mut self, context: Context) -> Self {
        self.context = context;
        self
    }

    /// Lets the human in front of the client approve one call of a tool that needs confirmation,
    /// when the host did not grant `confirm:<tool>` (off by default; host grants always take
    /// precedence and nobody is asked then).
    ///
    /// On a 2025-11-25 session whose client supports form elicitation, the server asks with
    /// `elicitation/create`; on 2026-07-28 it answers `input_required` with the same question and
    /// a sealed `requestState`, and runs the call on the client's retry. The question names the
    /// tool and summarises the arguments; the form's one field, [`CONFIRM_FIELD`], must be `true`.
    /// Approved, the call runs once, with `confirm:<tool>` added to that call's context only;
    /// declined or cancelled, it is `CONFIRMATION_DECLINED`; a state that was altered, replayed,
    /// expired (5 minutes) or moved to other arguments, tool or principal is
    /// `CONFIRMATION_INVALID`. A client without elicitation gets `CONFIRMATION_REQUIRED`, as when
    /// this is off.
    pub fn confirm_via_client(mut self, enabled: bool) -> Self {
        self.confirm = enabled.then(|| Arc::new(confirm::ClientConfirmation::new()));
        self
    }

    /// The name and version announced to clients (`serverInfo`); `carmy-mcp` and its version by
    /// default.
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let info = Arc::make_mut(&mut self.info);
        let title = info.server_info.title.take();
        info.server_info = Implementation::new(name, version);
        info.server_info.title = title;
        self
    }

    /// A human-friendly name for the server, shown by clients instead of its `name`.
    pub fn server_title(mut self, title: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.info).server_info.title = Some(title.into());
        self
    }

    /// Instructions for the model on using this server's tools together.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.info).instructions = Some(instructions.into());
        self
    }

    /// The longest message accepted on [`serve_stdio`](Self::serve_stdio) and
    /// [`serve_io`](Self::serve_io), in bytes ([`DEFAULT_MAX_LINE_BYTES`], 4 MiB, by default).
    pub fn max_line_bytes(mut self, max_line_bytes: usize) -> Self {
        self.max_line_bytes = max_line_bytes;
        self
    }

    /// The runtime being served.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Serves one client on the process's standard input and output until it disconnects.
    ///
    /// When both are pipes (as MCP clients launch servers) they are driven without the blocking
    /// thread pool; a terminal or a file falls back to tokio's blocking stdio. Must run inside a
    /// tokio runtime with IO enabled.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let transport = LineTransport::stdio().max_line_bytes(self.max_line_bytes);
        self.serve_transport(transport).await
    }

    /// Serves one client on a byte stream (a Unix socket, a TCP connection, a pipe pair) until
    /// it disconnects, with the same framing guards as stdio.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> Result<(), ServeError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let transport = LineTransport::new(read, write).max_line_bytes(self.max_line_bytes);
        self.serve_transport(transport).await
    }

    async fn serve_transport<R, W>(
        mut self,
        transport: LineTransport<R, W>,
    ) -> Result<(), ServeError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let transport = transport.write_tools_from(Arc::clone(&self.listing));
        self.transport_writes_tools = true;
        let running = match self.serve(transport).await {
            Ok(running) => running,
            // The client went away before starting a session (a probe, a health check): that
            // is an end of input, not a failure.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(error) => return Err(ServeError::Start(Box::new(error))),
        };
        running.waiting().await.map_err(ServeError::Task)?;
        Ok(())
    }
}

/// Why serving stopped other than by the client disconnecting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The session could not start (a failed `initialize`, a transport error).
    #[error("cannot start the MCP session: {0}")]
    Start(#[source] Box<ServerInitializeError>),
    /// The session's task failed.
    #[error("the MCP session failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}
