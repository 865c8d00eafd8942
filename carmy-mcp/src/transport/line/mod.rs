//! Newline-delimited JSON-RPC over byte streams, with the guards rmcp's own framing lacks.
//!
//! rmcp's `AsyncRwTransport` drops a line that is not JSON and a line over its size limit without
//! a word, so a client waits for an answer that never comes. [`LineTransport`] answers both
//! (`-32700` / `-32600`, JSON-RPC style) and keeps serving. It also writes in bursts: every message
//! queued while the previous write was in flight goes out in one write and one flush.
//!
//! It bounds what a client can make the server hold. rmcp's serve loop spawns one task per
//! response and keeps reading requests whatever happens to the output, so a client that writes
//! requests and never reads its answers would make the server's memory grow without end. This
//! transport stops reading while more than [`DEFAULT_MAX_OUTBOX_BYTES`] wait to be written, or
//! while [`DEFAULT_MAX_IN_FLIGHT`] requests are unanswered; the client's writes then block on the
//! full pipe, which is the back-pressure a byte stream can give.
//!
//! One file per concern: `framing.rs` reads bounded lines, `classify.rs` decides what a line is
//! (with `scan.rs` for lines that do not parse and `call_parse.rs`, a fast path for
//! `tools/call`), `flow.rs` tracks the requests in flight, `outbox.rs` writes, and `page.rs`
//! writes `tools/list` pages.

mod call_parse;
mod classify;
mod flow;
mod framing;
mod outbox;
mod page;
mod scan;

use std::{borrow::Cow, future::Future, io, sync::Arc};

use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage},
    transport::{StdioReader, StdioWriter, Transport},
};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use classify::{INVALID_REQUEST, Parsed, parse_line};
use flow::Flow;
use framing::{LineRead, Lines};
use outbox::{Outbox, Writer};
pub(crate) use page::ToolsPage;

/// The longest message [`LineTransport`] accepts by default: 4 MiB, newline excluded. Longer
/// lines are answered with `-32600` and skipped.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Bytes of answers waiting for a slow client after which [`LineTransport`] stops reading
/// requests, by default: 8 MiB. Reading resumes once the client has taken them.
pub const DEFAULT_MAX_OUTBOX_BYTES: usize = 8 * 1024 * 1024;

/// Requests read and not answered yet after which [`LineTransport`] stops reading more, by
/// default: 1,024 (the runtime's default bound on concurrent executions).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// A server-side MCP transport over any byte stream: one JSON-RPC message per line.
///
/// Compared to handing the stream to `rmcp::ServiceExt::serve` directly, it
/// - answers a line that is not JSON with `-32700` and `id: null`, and keeps reading;
/// - answers a line longer than [`max_line_bytes`](Self::max_line_bytes) with `-32600` (naming the
///   request's `id` when it appears near the start of the line), skips the rest of that line and
///   keeps reading, without ever buffering more than the limit;
/// - answers well-formed JSON that is not a JSON-RPC message (a batch, a request without
///   `method`...) with `-32600`; invalid notifications and responses get no answer, as JSON-RPC
///   requires;
/// - ignores notifications and responses that arrive before the session is open (before
///   `initialize`, or the first 2026-07-28 request with its metadata), which would otherwise
///   make rmcp abandon the connection;
/// - answers a request whose `id` is already in flight with `-32600` instead of running it (rmcp
///   would run both and drop one answer);
/// - answers JSON nested as deep as serde_json refuses (128 levels) with `-32600` naming the
///   request, without recursing into it;
/// - stops reading while [`max_outbox_bytes`](Self::max_outbox_bytes) of answers wait for the
///   client, or [`max_in_flight`](Self::max_in_flight) requests are unanswered, so a client that
///   does not read cannot make the server's memory grow: its own writes block instead;
/// - writes every message queued during the previous write in a single write and flush;
/// - writes `tools/list` results whose tools are the ones it wrote last from their kept JSON
///   (`page.rs`): the same bytes, without serializing the catalog per request.
///
/// ```no_run
/// # async fn demo(server: carmy_mcp::McpServer) -> Result<(), Box<dyn std::error::Error>> {
/// use rmcp::ServiceExt;
///
/// let listener = tokio::net::UnixListener::bind("/tmp/shop.sock")?;
/// let (stream, _) = listener.accept().await?;
/// let (read, write) = stream.into_split();
/// let transport = carmy_mcp::LineTransport::new(read, write).max_line_bytes(1 << 20);
/// server.serve(transport).await?.waiting().await?;
/// # Ok(())
/// # }
/// ```
pub struct LineTransport<R, W> {
    lines: Lines<R>,
    flow: Flow,
    max_outbox_bytes: usize,
    outbox: Arc<Outbox>,
    writer: Writer<W>,
    page: Arc<ToolsPage>,
}

impl<R, W> std::fmt::Debug for LineTransport<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineTransport")
            .field("max_line_bytes", &self.lines.max_line_bytes)
            .field("buffered", &self.lines.buffered())
            .field("in_flight", &self.flow.in_flight())
            .field("max_in_flight", &self.flow.max_in_flight)
            .field("max_outbox_bytes", &self.max_outbox_bytes)
            .finish_non_exhaustive()
    }
}

impl LineTransport<StdioReader, StdioWriter> {
    /// The process's standard input and output. When both are pipes (the way MCP clients launch
    /// servers), they are driven as non-blocking pipes on the IO reactor; otherwise (a terminal,
    /// a file) through tokio's blocking `Stdin`/`Stdout`.
    ///
    /// Must be called inside a tokio runtime with IO enabled.
    pub fn stdio() -> Self {
        // rmcp reopens fds 0 and 1 through /proc/self/fd so that O_NONBLOCK stays private to this
        // transport instead of leaking into the process's (and its children's) standard streams.
        let (read, write) = rmcp::transport::stdio_pipes();
        Self::new(read, write)
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading messages from `read` and writing them to `write`.
    pub fn new(read: R, write: W) -> Self {
        Self {
            lines: Lines::new(read, DEFAULT_MAX_LINE_BYTES),
            flow: Flow::new(DEFAULT_MAX_IN_FLIGHT),
            max_outbox_bytes: DEFAULT_MAX_OUTBOX_BYTES,
            outbox: Arc::new(Outbox::new()),
            writer: Writer::Idle(write),
            page: Arc::default(),
        }
    }

    /// Shares the kept `tools/list` page with the other transports of one server, so that a
    /// catalog is serialized once per server rather than once per connection.
    pub(crate) fn sharing_page(mut self, page: Arc<ToolsPage>) -> Self {
        self.page = page;
        self
    }

    /// Replaces the longest accepted message ([`DEFAULT_MAX_LINE_BYTES`] by default), in bytes,
    /// newline excluded.
    #[must_use]
    pub fn max_line_bytes(mut self, max_line_bytes: usize) -> Self {
        self.lines.max_line_bytes = max_line_bytes;
        self
    }

    /// Replaces the bytes of unsent answers after which reading stops
    /// ([`DEFAULT_MAX_OUTBOX_BYTES`] by default). One answer larger than this is still sent.
    #[must_use]
    pub fn max_outbox_bytes(mut self, max_outbox_bytes: usize) -> Self {
        self.max_outbox_bytes = max_outbox_bytes;
        self
    }

    /// Replaces the number of unanswered requests after which reading stops
    /// ([`DEFAULT_MAX_IN_FLIGHT`] by default; at least 1).
    #[must_use]
    pub fn max_in_flight(mut self, max_in_flight: usize) -> Self {
        self.flow.max_in_flight = max_in_flight.max(1);
        self
    }

    /// The next message for rmcp, answering on the way every line that is not one.
    fn take(&mut self, parsed: Parsed) -> Option<ClientJsonRpcMessage> {
        match parsed {
            Parsed::Message(message) => {
                let request_id = match &*message {
                    JsonRpcMessage::Request(request) => Some(request.id.clone()),
                    _ => None,
                };
                let Some(id) = request_id else {
                    if !self.flow.started() {
                        tracing::debug!("ignoring a message that precedes the session");
                        return None;
                    }
                    return Some(self.flow.admit(message));
                };
                if self.flow.is_in_flight(&id) {
                    tracing::debug!(%id, "refusing a request whose id is in flight");
                    self.outbox.answer(
                        serde_json::to_value(&id).unwrap_or(Value::Null),
                        INVALID_REQUEST,
                        format!("Invalid Request: request id {id} is already in flight"),
                        Some(json!({ "field": "id" })),
                    );
                    return None;
                }
                if !self.flow.has_room() {
                    self.flow.held = Some(message);
                    return None;
                }
                Some(self.flow.admit(message))
            }
            Parsed::Skip => None,
            Parsed::Answer {
                id,
                code,
                message,
                data,
            } => {
                tracing::debug!(code, %message, "answering an unusable message");
                self.outbox.answer(id, code, message, data);
                None
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn name() -> Cow<'static, str> {
        "LineTransport".into()
    }

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        self.writer.start(&self.outbox);
        self.flow.answered(&item);
        let outbox = Arc::clone(&self.outbox);
        let page = Arc::clone(&self.page);
        async move {
            // Serialized in the sending task, so large results do not hold up the others.
            let mut bytes = page.to_vec(item)?;
            bytes.push(b'\n');
            let ticket = outbox.push(&bytes)?;
            outbox.written(ticket).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.writer.start(&self.outbox);
        loop {
            // Back-pressure: nothing more is read while the client leaves its answers unread.
            // Cancellation-safe (rmcp polls this inside `select!`): waiting consumes nothing.
            if !self.outbox.wait_for_room(self.max_outbox_bytes).await {
                return None;
            }
            if self.flow.held.is_some() {
                if self.flow.has_room() {
                    let held = self.flow.held.take().expect("checked above");
                    return Some(self.flow.admit(held));
                }
                // Full: wait until rmcp sends an answer, which drops this future and calls
                // `receive` again. Reading stops meanwhile, so the client's writes block.
                std::future::pending::<()>().await;
            }
            match self.lines.next().await {
                LineRead::Line => {}
                LineRead::Oversized { id } => {
                    let max_line_bytes = self.lines.max_line_bytes;
                    tracing::warn!(
                        max_line_bytes,
                        "refused a message longer than the line limit"
                    );
                    self.outbox.answer(
                        id,
                        INVALID_REQUEST,
                        format!(
                            "Invalid Request: the message is longer than {max_line_bytes} bytes"
                        ),
                        Some(json!({ "max_line_bytes": max_line_bytes })),
                    );
                    continue;
                }
                LineRead::Eof => return None,
                LineRead::Io(error) => {
                    tracing::error!(%error, "cannot read from the client");
                    return None;
                }
            }
            let parsed = parse_line(self.lines.line());
            self.lines.clear();
            if let Some(message) = self.take(parsed) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.outbox.close();
        self.writer.stop().await;
        Ok(())
    }
}

impl<R, W> Drop for LineTransport<R, W> {
    fn drop(&mut self) {
        // Without `close` (the session was torn down abruptly), the writer still drains what is
        // queued and then exits instead of waiting forever.
        self.outbox.close();
    }
}
