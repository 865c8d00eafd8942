//! [`McpServer`]: a Carmy runtime as an MCP server, its builder, and serving it on stdio or any
//! byte stream. Network transports take an `McpServer` (see `transport/`).
// MCP's logging types are marked deprecated in rmcp (see `logging.rs`).
#![allow(deprecated)]

use std::sync::Arc;

use carmy_core::{Context, Runtime};
use rmcp::{
    ServiceExt,
    model::{
        Implementation, PromptsCapability, ResourcesCapability, ServerCapabilities, ServerConfig,
        TASKS_EXTENSION_ID,
    },
    service::ServerInitializeError,
};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{
    client::{RoundTrips, StateKeys},
    mapping::{Listing, PromptListing, ResourceListing},
    session::SessionState,
    transport::line::{CallThread, DEFAULT_MAX_LINE_BYTES, LineTransport, ToolsPage},
};

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
    pub(crate) listing: Arc<Listing>,
    pub(crate) resources: Arc<ResourceListing>,
    pub(crate) prompts: Arc<PromptListing>,
    /// Every round trip to the client: questions and confirmations, their states (2026-07-28)
    /// and the calls waiting for answers; shared by every clone.
    pub(crate) round_trips: Arc<RoundTrips>,
    /// The `tools/list` page its line transports keep, shared by all of them.
    page: Arc<ToolsPage>,
    /// What one session's client chose; fresh for each session ([`McpServer::for_session`]).
    pub(crate) session: Arc<SessionState>,
    max_line_bytes: usize,
    /// Chosen with [`McpServer::call_thread`]; `None`: chosen by [`serve_stdio`] from the
    /// runtime it runs on, and off for [`serve_io`].
    ///
    /// [`serve_stdio`]: McpServer::serve_stdio
    /// [`serve_io`]: McpServer::serve_io
    call_thread: Option<CallThread>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("server_info", &self.info.server_info)
            .field("runtime", &self.runtime)
            .field("context", &self.context)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("confirm_via_client", &self.round_trips.confirms())
            .field("state_keys", self.round_trips.keys())
            .field("call_thread", &self.call_thread)
            .finish()
    }
}

impl McpServer {
    /// Serves `runtime`'s tools, anonymously and without grants until [`context`] says
    /// otherwise. The tool list is built here, once; what the catalog disables while serving is
    /// left out of it, and every session is told (`listChanged`).
    ///
    /// [`context`]: McpServer::context
    pub fn new(runtime: Runtime) -> Self {
        let listing = Arc::new(Listing::new(runtime.catalog()));
        let resources = Arc::new(ResourceListing::new(runtime.catalog().resources()));
        // Every list may change while serving (`Catalog::disable`): sessions are told.
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let prompts = Arc::new(PromptListing::new(runtime.catalog().prompts()));
        let catalog = runtime.catalog();
        if !resources.is_empty() || catalog.providers().next().is_some() {
            let mut resources = ResourcesCapability::default();
            resources.list_changed = Some(true);
            // Subscriptions are offered when a provider reports changes.
            if catalog.reports_resource_changes() {
                resources.subscribe = Some(true);
            }
            capabilities.resources = Some(resources);
        }
        if !prompts.is_empty() {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        let completes = catalog
            .prompts()
            .any(|prompt| !prompt.completes().is_empty())
            || catalog
                .resources()
                .any(|resource| !resource.completes().is_empty());
        if completes {
            capabilities.completions = Some(Default::default());
        }
        // Events of a request go to its client once it asks (`logging.rs`).
        capabilities.logging = Some(Default::default());
        // The tasks extension (2026-07-28), when a tool's calls may become tasks.
        if catalog
            .iter()
            .any(|tool| tool.task_support().allows_tasks())
        {
            capabilities
                .extensions
                .get_or_insert_default()
                .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
        }
        let info = ServerConfig::new(capabilities).with_server_info(Implementation::new(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
        ));
        let round_trips = Arc::new(RoundTrips::new(
            false,
            StateKeys::random(),
            runtime.redemptions().clone(),
        ));
        Self {
            runtime,
            context: Context::new(),
            info: Arc::new(info),
            listing,
            resources,
            prompts,
            round_trips,
            page: Arc::default(),
            session: Arc::default(),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            call_thread: None,
        }
    }

    /// The trusted context every call runs under: principal, grants, extensions (a [`Context`],
    /// or a [`Caller`](carmy_core::Caller)). It is the host's decision alone; tool arguments and
    /// request `_meta` never add to it.
    pub fn context(mut self, context: impl Into<Context>) -> Self {
        self.context = context.into();
        self
    }

    /// Lets the human in front of the client approve one call of a tool that needs confirmation,
    /// when the host did not grant `confirm:<tool>` (off by default; host grants always take
    /// precedence and nobody is asked then).
    ///
    /// On a 2025-11-25 session whose client supports form elicitation, the server asks with
    /// `elicitation/create`; on 2026-07-28 it answers `input_required` with the same question and
    /// a sealed `requestState`, and runs the call on the client's retry. The question names the
    /// tool and summarises the arguments; the form's one field,
    /// [`CONFIRM_FIELD`](crate::CONFIRM_FIELD), must be `true`. This is the runtime's approval
    /// step, with the client as the call's [`Approver`](carmy_core::Approver): approved, the call
    /// runs once (the host's context is unchanged); declined or cancelled, it is
    /// `CONFIRMATION_DECLINED`; a state used a second time is `CONFIRMATION_INVALID`; a state
    /// that was altered, expired (10 minutes) or moved to other arguments, tool or principal is
    /// refused `-32602` before anything runs, as for a tool's own questions. A client without
    /// elicitation gets `CONFIRMATION_REQUIRED`, as when this is off.
    pub fn confirm_via_client(mut self, enabled: bool) -> Self {
        self.round_trips = Arc::new(self.round_trips.confirming(enabled));
        self
    }

    /// The keys that seal the `requestState` of 2026-07-28 round trips (a tool's questions, a
    /// confirmation through the client). By default a random key of this process: right for
    /// one process, while replicas behind a balancer must share keys, since a client's retry
    /// may reach any of them. See [`StateKeys`] for the key file and rotation.
    pub fn state_keys(mut self, keys: StateKeys) -> Self {
        self.round_trips = Arc::new(self.round_trips.sealed_with(keys));
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

    /// Where a session on [`serve_stdio`](Self::serve_stdio) or [`serve_io`](Self::serve_io)
    /// runs its tool calls and resource reads.
    ///
    /// One session's messages pass through one serve loop, on one thread. With
    /// [`CallThread::WhenBusy`], while other requests are in flight `tools/call` and
    /// `resources/read` requests also run on a second thread of the session's own, with a
    /// current-thread runtime, so that a client with many of them in flight is served from two
    /// cores; one made alone still runs on the loop's thread, with nothing handed over.
    /// [`CallThread::Always`] sends every one there. Either way a request longer than 64 KiB
    /// stays on the loop's thread, whose heap holds what earlier large messages left free,
    /// rather than growing the second thread's. Ids, cancellations, the in-flight bound and
    /// questions to the client work across both threads as on one. Sessions opened without
    /// `initialize` (2026-07-28) keep them all on the loop.
    ///
    /// By default `serve_stdio` picks `WhenBusy` when it runs on a current-thread tokio runtime
    /// (a multi-threaded one spreads the calls already) on a machine with more than one core,
    /// and `Off` otherwise; `serve_io`, which a server may run for many connections at once,
    /// picks `Off`.
    pub fn call_thread(mut self, call_thread: CallThread) -> Self {
        self.call_thread = Some(call_thread);
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
        let call_thread = self.call_thread.unwrap_or_else(default_stdio_call_thread);
        self.serve_transport(transport, call_thread).await
    }

    /// Serves one client on a byte stream (a Unix socket, a TCP connection, a pipe pair) until
    /// it disconnects, with the same framing guards as stdio.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> Result<(), ServeError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let transport = LineTransport::new(read, write).max_line_bytes(self.max_line_bytes);
        let call_thread = self.call_thread.unwrap_or(CallThread::Off);
        self.serve_transport(transport, call_thread).await
    }

    async fn serve_transport<R, W>(
        self,
        transport: LineTransport<R, W>,
        call_thread: CallThread,
    ) -> Result<(), ServeError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let mut transport = transport.sharing_page(Arc::clone(&self.page));
        let starter = transport.call_thread(call_thread);
        let session = self.for_session();
        let running = match session.clone().serve(transport).await {
            Ok(running) => running,
            // The client went away before starting a session (a probe, a health check): that
            // is an end of input, not a failure.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(error) => return Err(ServeError::Start(Box::new(error))),
        };
        if let Some(starter) = starter {
            // The same session (its log level, its subscriptions) on a second service, which
            // knows the client from its `initialize`.
            let peer_info = running.peer().peer_info().map(|info| (*info).clone());
            starter.start(session, peer_info);
        }
        running.waiting().await.map_err(ServeError::Task)?;
        Ok(())
    }
}

/// `serve_stdio`'s call thread unless one was chosen: on when the runtime it runs on has one
/// thread and the machine more than one core.
fn default_stdio_call_thread() -> CallThread {
    let one_thread = tokio::runtime::Handle::try_current().is_ok_and(|handle| {
        handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread
    });
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if one_thread && cores > 1 {
        CallThread::WhenBusy
    } else {
        CallThread::Off
    }
}

impl McpServer {
    /// This server for one more session: everything shared, but what a session's client
    /// chooses (its log level) starts afresh.
    pub(crate) fn for_session(&self) -> Self {
        Self {
            session: Arc::default(),
            ..self.clone()
        }
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
