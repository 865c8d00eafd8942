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
//! transport stops reading while more than [`DEFAULT_MAX_OUTBOX_BYTES`] wait to be written. Past
//! [`DEFAULT_MAX_IN_FLIGHT`] unanswered requests, it reads on so that cancellations and the
//! client's answers still get through, and keeps the requests it reads waiting, up to as many
//! again (and 4 MiB of them); then it stops reading. Either way the client's writes block on the
//! full pipe, which is the back-pressure a byte stream can give.
//!
//! It keeps request ids exact. rmcp reads `7.0` as `7`, takes `"0"` for `0` in answers, and
//! matches an answer to its request by id alone, so an id reused right after its cancel would
//! get the old call's answer while the new call is stopped. The transport hands rmcp requests
//! under ids of its own, used once, and writes each answer with the client's id as written.
//!
//! One stdio session may run its tool calls and resource reads on two threads: `call_thread.rs`
//! serves some of them on a second rmcp service, on a thread of its own, while others are in
//! flight.
//!
//! One file per concern: `framing.rs` reads bounded lines, `classify.rs` decides what a line is
//! (with `scan.rs` for lines that do not parse, `call_parse.rs`, a fast path for `tools/call`
//! and `resources/read`, and `ids.rs`, the ids as written), `flow.rs` tracks the requests in
//! flight and waiting, `outbox.rs` writes, `encode.rs` serializes every message it writes
//! (`tools/list` pages once), in a buffer of the thread's (`scratch.rs`).

mod call_parse;
mod call_thread;
mod classify;
mod encode;
mod flow;
mod framing;
mod ids;
mod outbox;
mod scan;
mod scratch;

use std::{
    borrow::Cow,
    future::Future,
    io,
    sync::{Arc, Mutex},
};

use rmcp::{
    RoleServer,
    model::{
        ClientJsonRpcMessage, ClientRequest, ErrorCode, JsonRpcMessage, RequestId,
        ServerJsonRpcMessage,
    },
    transport::{StdioReader, StdioWriter, Transport},
};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

pub use call_thread::CallThread;
use call_thread::Shared;
pub(crate) use call_thread::Starter as CallThreadStarter;
use classify::{Incoming, Parsed, parse_line};
pub(crate) use encode::ToolsPage;
use flow::{Admission, Flow, Lifecycle, Service};
use framing::{LineRead, Lines};
use ids::ClientId;
use outbox::{Outbox, Writer};

use crate::sync::lock;

/// The longest message [`LineTransport`] accepts by default: 4 MiB, newline excluded. Longer
/// lines are answered with `-32600` and skipped.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Bytes of answers waiting for a slow client after which [`LineTransport`] stops reading
/// requests, by default: 8 MiB. Reading resumes once the client has taken them.
pub const DEFAULT_MAX_OUTBOX_BYTES: usize = 8 * 1024 * 1024;

/// Requests read and not answered yet after which [`LineTransport`] keeps further requests
/// waiting (and stops reading once as many wait), by default: 1,024 (the runtime's default
/// bound on concurrent executions).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// Messages handed to rmcp in a row, at most, before the serve loop lets the rest of the server
/// run. A client that pipelines many requests fills the input with them; handed over all at
/// once, every one of them would run before the first answer is written, and the client,
/// waiting for answers to send more, would sit idle while the server works and the server
/// while the client reads. A few at a time, the first answers go out while the next requests
/// run, and the client's next requests arrive meanwhile (`bench/README.md`, "Using the second
/// core").
const BURST: usize = 8;

/// While calls pile up, the call thread takes a call unless it already has more than this many
/// times as many requests in flight as the loop: the loop also reads and writes for both, and
/// a call thread with more than its share queued leaves the rest to the loop, so that neither
/// thread idles while the other has a queue. Measured against shares of 1, 2 and 3 and fixed
/// splits in `bench/README.md` ("Using the second core").
const CALL_THREAD_SHARE: usize = 3;

/// A call whose line is longer stays on the loop. Each thread allocates from a heap of its own
/// (glibc's arenas), and memory one frees the other does not reuse: a large call run on the
/// call thread would grow a second heap beside the loop's, which holds what earlier large
/// messages left free. Its parse dwarfs what the hand-over saves anyway.
const MAX_HANDED_LINE_BYTES: usize = 64 * 1024;

/// Bytes of lines of the requests that wait while [`DEFAULT_MAX_IN_FLIGHT`] are unanswered after
/// which reading stops (at least one request waits, whatever its size).
const MAX_WAITING_BYTES: usize = 4 * 1024 * 1024;

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
/// - keeps ids exactly as the client wrote them: an answer carries the request's id as sent
///   (`7.0` stays `7.0`), a cancellation stops the one request whose id is the same JSON value
///   (`7.0` is not `7`, nor `"7"`), an id reused once its request is cancelled names the new
///   request, and an answer from the client counts only with the exact id of the server's
///   request (`0`, not `"0"` or `0.0`); handlers see ids of the transport's own;
/// - refuses `initialize` once the session is open (`-32600`; `-32601` in a 2026-07-28 session,
///   which has none): the client's capabilities are the ones it declared first;
/// - answers JSON nested as deep as serde_json refuses (128 levels) with `-32600` naming the
///   request, without recursing into it;
/// - stops reading while [`max_outbox_bytes`](Self::max_outbox_bytes) of answers wait for the
///   client, so a client that does not read cannot make the server's memory grow: its own
///   writes block instead;
/// - past [`max_in_flight`](Self::max_in_flight) unanswered requests, reads on so that a
///   cancellation always gets through (it also stops a request still waiting), keeping up to as
///   many requests again waiting (and 4 MiB of their lines) before it stops reading;
/// - writes every message queued during the previous write in a single write and flush;
/// - hands a client's pipelined requests to rmcp a few at a time, so that the first answers are
///   written while the next requests run, rather than all answers once all have run;
/// - writes `tools/list` results whose tools are the ones it wrote last from their kept JSON
///   (`encode.rs`): the same bytes, without serializing the catalog per request;
/// - served by [`McpServer`](crate::McpServer), runs calls on a second thread as its
///   [`CallThread`] setting says, under all of the above.
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
    /// The client's input ended; the requests still waiting are handed over before rmcp hears
    /// of it.
    ended: bool,
    /// Shared with the call thread, when the session has one.
    flow: Arc<Mutex<Flow>>,
    max_outbox_bytes: usize,
    outbox: Arc<Outbox>,
    writer: Writer<W>,
    page: Arc<ToolsPage>,
    /// Messages handed to rmcp since the serve loop last let the rest of the server run.
    burst: usize,
    call_thread: CallThread,
    shared: Arc<Shared>,
}

impl<R, W> std::fmt::Debug for LineTransport<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let flow = lock(&self.flow);
        f.debug_struct("LineTransport")
            .field("max_line_bytes", &self.lines.max_line_bytes)
            .field("buffered", &self.lines.buffered())
            .field("in_flight", &flow.in_flight())
            .field("waiting", &flow.waiting())
            .field("max_in_flight", &flow.max_in_flight)
            .field("max_outbox_bytes", &self.max_outbox_bytes)
            .field("call_thread", &self.call_thread)
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
            ended: false,
            flow: Arc::new(Mutex::new(Flow::new(
                DEFAULT_MAX_IN_FLIGHT,
                MAX_WAITING_BYTES,
            ))),
            max_outbox_bytes: DEFAULT_MAX_OUTBOX_BYTES,
            outbox: Arc::new(Outbox::new()),
            writer: Writer::Idle(write),
            page: Arc::default(),
            burst: 0,
            call_thread: CallThread::Off,
            shared: Arc::default(),
        }
    }

    /// Runs calls on a second thread as `mode` says, once the returned starter has started it
    /// (with the session's service, when the session is open); `None` when `mode` is off.
    pub(crate) fn call_thread(&mut self, mode: CallThread) -> Option<CallThreadStarter> {
        self.call_thread = mode;
        (mode != CallThread::Off).then(|| CallThreadStarter {
            flow: Arc::clone(&self.flow),
            outbox: Arc::clone(&self.outbox),
            page: Arc::clone(&self.page),
            shared: Arc::clone(&self.shared),
        })
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

    /// Replaces the number of unanswered requests after which requests wait
    /// ([`DEFAULT_MAX_IN_FLIGHT`] by default; at least 1); reading stops once as many wait.
    #[must_use]
    pub fn max_in_flight(self, max_in_flight: usize) -> Self {
        lock(&self.flow).max_in_flight = max_in_flight.max(1);
        self
    }

    /// The next message for rmcp: a request let through (or one that waited for room), a
    /// notification or an answer; `None` once the input ended or failed. Cancellation-safe.
    async fn next_message(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            // Back-pressure: nothing more is read while the client leaves its answers unread.
            // Cancellation-safe (rmcp polls this inside `select!`): waiting consumes nothing.
            if !self.outbox.wait_for_room(self.max_outbox_bytes).await {
                return None;
            }
            let stuck = {
                let mut flow = lock(&self.flow);
                if let Some(waited) = flow.next_waiting() {
                    return Some(waited);
                }
                flow.is_full() || (self.ended && flow.waiting() > 0)
            };
            if stuck {
                // As many requests wait as may be in flight (or the input ended behind them):
                // wait until an answer makes room, from the call thread (which wakes this) or
                // from rmcp (which drops this future to send it, and calls `receive` again).
                // Reading stops meanwhile, so the client's writes block.
                self.shared.answered.notified().await;
                continue;
            }
            if self.ended {
                return None;
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
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "Invalid Request: the message is longer than {max_line_bytes} bytes"
                        ),
                        Some(json!({ "max_line_bytes": max_line_bytes })),
                    );
                    continue;
                }
                LineRead::Eof => {
                    self.ended = true;
                    continue;
                }
                LineRead::Io(error) => {
                    tracing::error!(%error, "cannot read from the client");
                    return None;
                }
            }
            if self.hand_to_call_thread() {
                self.lines.clear();
                // Counted as handed over: a client's pipelined calls still let answers out.
                self.burst += 1;
                if self.burst >= BURST {
                    // Cancellation-safe: the line went to the call thread.
                    tokio::task::yield_now().await;
                    self.burst = 0;
                }
                continue;
            }
            let parsed = parse_line(self.lines.line());
            self.lines.clear();
            if let Some(message) = self.take(parsed) {
                return Some(message);
            }
        }
    }

    /// Hands the line just read to the call thread, when it is a `tools/call` or a
    /// `resources/read` that runs there (every one, or while requests are in flight its share of
    /// them, as `call_thread` says, and none longer than [`MAX_HANDED_LINE_BYTES`]) and the loop
    /// would hand it over now; otherwise it takes the loop's way.
    fn hand_to_call_thread(&mut self) -> bool {
        // Running only once a session with a call thread is open.
        if !self.shared.is_running() || self.lines.line().len() > MAX_HANDED_LINE_BYTES {
            return false;
        }
        if self.call_thread == CallThread::WhenBusy {
            let flow = lock(&self.flow);
            let on_call_thread = flow.on_call_thread();
            let on_loop = flow.in_flight() - on_call_thread;
            // Alone, or behind calls of the call thread's only: the loop's own.
            if on_loop == 0 || on_call_thread > CALL_THREAD_SHARE * on_loop {
                return false;
            }
        }
        let Some(id) = call_parse::work_id(self.lines.line()) else {
            return false;
        };
        let Ok(ours) = lock(&self.flow).hand_to_call_thread(id) else {
            return false;
        };
        if self.shared.call(self.lines.line(), ours) {
            return true;
        }
        // The call thread failed: the loop serves the call instead.
        lock(&self.flow).release(ours);
        false
    }

    /// The next message for rmcp, answering on the way every line that is not one.
    fn take(&mut self, parsed: Parsed) -> Option<ClientJsonRpcMessage> {
        let incoming = match parsed {
            Parsed::Message(incoming) => incoming,
            Parsed::Skip => return None,
            Parsed::Answer {
                id,
                code,
                message,
                data,
            } => {
                tracing::debug!(code = code.0, message = ?ids::cut(&message, 200), "answering an unusable message");
                self.outbox.answer(id, code, message, data);
                return None;
            }
        };
        let lifecycle = lock(&self.flow).lifecycle();
        match &incoming.message {
            JsonRpcMessage::Request(request) => {
                if matches!(request.request, ClientRequest::InitializeRequest(_))
                    && lifecycle != Lifecycle::NotStarted
                {
                    self.refuse_initialize(&incoming, lifecycle);
                    return None;
                }
                let admission = lock(&self.flow).request(incoming);
                match admission {
                    Admission::Now(message) => Some(message),
                    Admission::Waits => None,
                    Admission::Duplicate(incoming) => {
                        let id = incoming.id.as_ref().expect("a request has its id");
                        tracing::debug!(id = %id.for_log(), "refusing a request whose id is in flight");
                        self.outbox.answer(
                            id.value(),
                            ErrorCode::INVALID_REQUEST,
                            format!(
                                "Invalid Request: request id {} is already in flight",
                                id.for_log()
                            ),
                            Some(json!({ "field": "id" })),
                        );
                        None
                    }
                }
            }
            _ if lifecycle == Lifecycle::NotStarted => {
                tracing::debug!("ignoring a message that precedes the session");
                None
            }
            JsonRpcMessage::Notification(_) if incoming.cancels.is_some() => {
                let Incoming {
                    message, cancels, ..
                } = *incoming;
                let cancel = lock(&self.flow).cancel(message, cancels.as_ref());
                self.route(cancel)
            }
            JsonRpcMessage::Notification(_) => Some(incoming.message),
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
                let asker = lock(&self.flow).client_answers(incoming.id.as_ref());
                let Some((service, id)) = asker else {
                    tracing::debug!(
                        id = ?incoming.id.as_ref().map(ClientId::for_log),
                        "ignoring an answer to no request of the server's"
                    );
                    return None;
                };
                let mut message = incoming.message;
                match &mut message {
                    JsonRpcMessage::Response(response) => response.id = RequestId::Number(id),
                    JsonRpcMessage::Error(error) => error.id = Some(RequestId::Number(id)),
                    _ => unreachable!("matched above"),
                }
                self.route(Some((message, service)))
            }
        }
    }

    /// `message` for rmcp when it is for the loop's service; passed to the call thread when it
    /// is for its service.
    fn route(
        &self,
        message: Option<(ClientJsonRpcMessage, Service)>,
    ) -> Option<ClientJsonRpcMessage> {
        match message? {
            (message, Service::Loop) => Some(message),
            (message, Service::CallThread) => {
                self.shared.message(message);
                None
            }
        }
    }

    /// Answers an `initialize` sent once the session is open: the client's capabilities are
    /// the ones it declared first, and a 2026-07-28 session has no `initialize` at all.
    fn refuse_initialize(&self, incoming: &Incoming, lifecycle: Lifecycle) {
        let id = incoming.id.as_ref().map_or(Value::Null, ClientId::value);
        tracing::debug!("refusing a second initialize");
        let (code, message) = match lifecycle {
            Lifecycle::Inline => (
                ErrorCode::METHOD_NOT_FOUND,
                "Method not found: a 2026-07-28 session has no `initialize`",
            ),
            _ => (
                ErrorCode::INVALID_REQUEST,
                "Invalid Request: the session is already initialized",
            ),
        };
        self.outbox.answer(id, code, message.into(), None);
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
        mut item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        self.writer.start(&self.outbox);
        let id = lock(&self.flow).sending(&mut item, Service::Loop);
        let outbox = Arc::clone(&self.outbox);
        let page = Arc::clone(&self.page);
        async move {
            // Serialized in the sending task, so large results do not hold up the others.
            let ticket = scratch::with_line(|line| {
                page.write(line, item, id.as_ref())?;
                line.push(b'\n');
                outbox.push(line)
            })?;
            outbox.written(ticket).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.writer.start(&self.outbox);
        if self.burst >= BURST {
            // Cancellation-safe: nothing is taken before this point.
            tokio::task::yield_now().await;
            self.burst = 0;
        }
        // rmcp drops this future whenever another of its events comes first (an answer, a
        // notification to send): only a message handed over counts.
        let message = self.next_message().await;
        self.burst += 1;
        if message.is_none() {
            // The input ended (or failed): the call thread answers what it has meanwhile.
            self.shared.stop();
        }
        message
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        // Its answers go through the outbox, which closes after them.
        self.shared.finish().await;
        self.outbox.close();
        self.writer.stop().await;
        Ok(())
    }
}

impl<R, W> Drop for LineTransport<R, W> {
    fn drop(&mut self) {
        // Without `close` (the session was torn down abruptly), the writer still drains what is
        // queued and then exits instead of waiting forever; so does the call thread.
        self.shared.stop();
        self.outbox.close();
    }
}
