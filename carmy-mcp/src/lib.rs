//! # carmy-mcp
//!
//! Serves a Carmy [`Runtime`](carmy_core::Runtime) over the [Model Context Protocol](https://modelcontextprotocol.io)
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
//! | `_meta["carmy/request_id"]` on `tools/call` | the idempotency key: a retry of a write with it gets the first outcome, replayed (a read runs again) |
//! | execution id and status | `_meta["carmy/execution_id"]`, `_meta["carmy/status"]` on every result |
//! | `notifications/cancelled` | the execution is cancelled: the tool's future is dropped, its status is `cancelled` |
//! | a progress token on `tools/call` | the tool's `Context::progress` reports become `notifications/progress` |
//! | `task = "optional"` / `"required"` (2026-07-28, client declared `io.modelcontextprotocol/tasks`) | the call becomes a task: `CreateTaskResult`; `tasks/get` (status, `statusMessage`, `inputRequests`, inlined `result` or `error`), `tasks/update` (answers), `tasks/cancel` |
//! | a tool's task support | `_meta["carmy/task"]` (`forbidden`, `optional`, `required`); the server declares the extension when a tool may run as a task |
//! | `task = "required"`, the request did not declare the extension | JSON-RPC `-32021`, `data.requiredCapabilities.extensions["io.modelcontextprotocol/tasks"]` |
//!
//! All four annotation hints are always stated, `false` included: MCP reads an absent
//! `destructiveHint` or `openWorldHint` as `true`. Annotations are hints to clients; the runtime's
//! policy (confirmation grants, idempotency, parallel safety) is what is enforced.
//!
//! `tools/list` is computed once, in [`McpServer::new`], and answered as one page that clients
//! may cache for 60 s (`ttlMs`). Schemas are the runtime's, exactly as it validates arguments;
//! [`carmy_core::schema::check_portable`] holds a catalog to the profile every popular client
//! accepts.
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
//!
//! ## The house
//!
//! Data flows one way, and so do the imports: the runtime's outcomes are mapped to MCP
//! (`mapping/`, pure functions), answered by the handler (`handler/`, one file per MCP area),
//! and written by a transport (`transport/`, which knows nothing of Carmy). [`McpServer`]
//! (`server.rs`) is the builder that puts them together; the network transports (`transport/`:
//! HTTP with its authentication, Unix sockets, graceful shutdown) take an `McpServer`.

mod client;
mod handler;
mod logging;
mod mapping;
mod scope;
mod server;
mod session;
mod subscriptions;
mod sync;
mod transport;

pub use client::{StateKeys, StateKeysError};
pub use logging::ClientLogLayer;
pub use mapping::{
    CONFIRM_FIELD, CONFIRM_INPUT_KEY, META_CONFIRMATION, META_EFFECT, META_ERROR,
    META_EXECUTION_ID, META_PARALLEL_SAFE, META_PROGRESS, META_REQUEST_ID, META_STATUS, META_TASK,
};
pub use rmcp;
pub use server::{McpServer, ServeError};
pub use transport::{
    CallThread, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_OUTBOX_BYTES,
    LineTransport,
};

#[cfg(feature = "http")]
pub use ::http::request::Parts as RequestParts;
#[cfg(feature = "http")]
pub use axum;
#[cfg(unix)]
pub use transport::UnixSocket;
#[cfg(feature = "http")]
pub use transport::{
    Authenticator, BearerTokens, HEALTH_PATH, HttpError, HttpServer, LOOPBACK_ORIGINS, MCP_PATH,
    MESSAGES_PATH, MIN_TOKEN_LEN, SSE_PATH, TokenFileError, Unauthorized,
};
pub use transport::{
    DEFAULT_GRACE_PERIOD, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_STREAM_TIMEOUT, DEFAULT_WRITE_TIMEOUT, shutdown_signal,
};
#[cfg(feature = "oauth")]
pub use transport::{DEFAULT_KEYS_MAX_AGE, OAuth, OAuthError};
