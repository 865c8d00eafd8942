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

use std::{
    borrow::Cow,
    collections::HashSet,
    future::Future,
    io,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    RoleServer,
    model::{
        ClientJsonRpcMessage, ClientNotification, ClientRequest, GetMeta, JsonRpcMessage,
        ProtocolVersion, RequestId, ServerJsonRpcMessage,
    },
    transport::{StdioReader, StdioWriter, Transport},
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    sync::{Notify, watch},
    task::JoinHandle,
};

use crate::{
    call_parse,
    listing::{self, Listing},
};

/// The longest message [`LineTransport`] accepts by default: 4 MiB, newline excluded. Longer
/// lines are answered with `-32600` and skipped.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Bytes of answers waiting for a slow client after which [`LineTransport`] stops reading
/// requests, by default: 8 MiB. Reading resumes once the client has taken them.
pub const DEFAULT_MAX_OUTBOX_BYTES: usize = 8 * 1024 * 1024;

/// Requests read and not answered yet after which [`LineTransport`] stops reading more, by
/// default: 1,024 (the runtime's default bound on concurrent executions).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// JSON-RPC: the line is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the line is JSON but not an acceptable request (shape, batch, size).
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the request's params are not an object.
const INVALID_PARAMS: i64 = -32602;

/// How much of an over-long line is kept to find its `id`, so the error can name the request.
const ID_SCAN_BYTES: usize = 64 * 1024;
/// How long `close` waits for queued messages to reach the peer.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// Reads are buffered in chunks of this size.
const READ_CHUNK: usize = 64 * 1024;
/// The write buffer is given back to the allocator when a burst left it larger than this.
const KEEP_WRITE_CAPACITY: usize = 1024 * 1024;

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
/// - answers JSON nested deeper than serde_json's limit (128) with `-32600` naming the request,
///   without recursing into it;
/// - stops reading while [`max_outbox_bytes`](Self::max_outbox_bytes) of answers wait for the
///   client, or [`max_in_flight`](Self::max_in_flight) requests are unanswered, so a client that
///   does not read cannot make the server's memory grow: its own writes block instead;
/// - writes every message queued during the previous write in a single write and flush.
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
    reader: BufReader<R>,
    /// The line being read. Survives a cancelled `receive` (rmcp polls it inside `select!`), so a
    /// partial line is resumed, never lost.
    line: Vec<u8>,
    /// Skipping the tail of an over-long line until its newline.
    discarding: bool,
    /// Bytes after which a line is refused.
    max_line_bytes: usize,
    /// Whether the session is open (rmcp left its initialization loop); notifications and
    /// responses before that are dropped.
    started: bool,
    /// A legacy (`initialize`) session: there, `notifications/cancelled` makes rmcp drop the
    /// request's answer, so the request stops counting as in flight.
    cancel_drops_answer: bool,
    /// Requests handed to rmcp and not answered yet.
    in_flight: HashSet<RequestId>,
    max_in_flight: usize,
    /// A request read while `in_flight` was full, waiting for room. Reading stops while it waits.
    held: Option<Box<ClientJsonRpcMessage>>,
    max_outbox_bytes: usize,
    outbox: Arc<Outbox>,
    writer: Writer<W>,
    /// Where the tools of `tools/list` results come from, already serialized, when the server
    /// leaves them out of its results (`McpServer` on this transport).
    tools: Option<Arc<Listing>>,
}

enum Writer<W> {
    /// Not started: the task is spawned on first use, so the transport can be built outside a
    /// runtime.
    Idle(W),
    Running(JoinHandle<()>),
    Gone,
}

impl<R, W> std::fmt::Debug for LineTransport<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineTransport")
            .field("max_line_bytes", &self.max_line_bytes)
            .field("buffered", &self.line.len())
            .field("discarding", &self.discarding)
            .field("in_flight", &self.in_flight.len())
            .field("max_in_flight", &self.max_in_flight)
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
            reader: BufReader::with_capacity(READ_CHUNK, read),
            line: Vec::new(),
            discarding: false,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            started: false,
            cancel_drops_answer: false,
            in_flight: HashSet::new(),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            held: None,
            max_outbox_bytes: DEFAULT_MAX_OUTBOX_BYTES,
            outbox: Arc::new(Outbox::new()),
            writer: Writer::Idle(write),
            tools: None,
        }
    }

    /// Writes the tools of every `tools/list` result from `listing`'s serialized page.
    pub(crate) fn write_tools_from(mut self, listing: Arc<Listing>) -> Self {
        self.tools = Some(listing);
        self
    }

    /// Replaces the longest accepted message ([`DEFAULT_MAX_LINE_BYTES`] by default), in bytes,
    /// newline excluded.
    #[must_use]
    pub fn max_line_bytes(mut self, max_line_bytes: usize) -> Self {
        self.max_line_bytes = max_line_bytes;
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
        self.max_in_flight = max_in_flight.max(1);
        self
    }

    /// Hands `message` to rmcp, keeping count of the requests it has to answer.
    fn admit(&mut self, message: Box<ClientJsonRpcMessage>) -> ClientJsonRpcMessage {
        match &*message {
            JsonRpcMessage::Request(request) => {
                if !self.started && opens_session(&request.request) {
                    self.started = true;
                    self.cancel_drops_answer =
                        matches!(request.request, ClientRequest::InitializeRequest(_));
                }
                self.in_flight.insert(request.id.clone());
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && self.cancel_drops_answer
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.in_flight.remove(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        *message
    }

    fn start_writer(&mut self) {
        if let Writer::Idle(_) = self.writer {
            let Writer::Idle(write) = std::mem::replace(&mut self.writer, Writer::Gone) else {
                unreachable!("checked above");
            };
            let task = tokio::spawn(write_loop(Arc::clone(&self.outbox), write));
            self.writer = Writer::Running(task);
        }
    }

    /// Reads up to the next newline without letting `self.line` grow past the limit.
    /// Cancellation-safe: bytes are moved from the reader into `self.line` with no await between
    /// the copy and the `consume`.
    async fn next_line(&mut self) -> LineRead {
        loop {
            let (consumed, step) = {
                let available = match self.reader.fill_buf().await {
                    Ok(available) => available,
                    Err(error) => return LineRead::Io(error),
                };
                if available.is_empty() {
                    // A last message without its newline still counts.
                    return if self.line.is_empty() || self.discarding {
                        LineRead::Eof
                    } else {
                        LineRead::Line
                    };
                }
                let newline = available.iter().position(|&byte| byte == b'\n');
                let content = newline.unwrap_or(available.len());
                let consumed = newline.map_or(available.len(), |at| at + 1);
                let step = if self.discarding {
                    if newline.is_some() {
                        Step::EndDiscard
                    } else {
                        Step::More
                    }
                } else if self.line.len().saturating_add(content) > self.max_line_bytes {
                    // Keep the head of the line: the request id is usually there.
                    let room = ID_SCAN_BYTES.saturating_sub(self.line.len());
                    self.line.extend_from_slice(&available[..content.min(room)]);
                    Step::Oversized {
                        ends_here: newline.is_some(),
                    }
                } else {
                    self.line.extend_from_slice(&available[..content]);
                    if newline.is_some() {
                        Step::Line
                    } else {
                        Step::More
                    }
                };
                (consumed, step)
            };
            self.reader.consume(consumed);
            match step {
                Step::Line => return LineRead::Line,
                Step::More => {}
                Step::EndDiscard => self.discarding = false,
                Step::Oversized { ends_here } => {
                    let head = &self.line[..self.line.len().min(ID_SCAN_BYTES)];
                    let id = leading_id(head);
                    self.line.clear();
                    self.discarding = !ends_here;
                    return LineRead::Oversized { id };
                }
            }
        }
    }
}

enum LineRead {
    /// A whole message is in `line` (without its newline).
    Line,
    /// A line over the limit was dropped; `id` is its request id, if it could be found.
    Oversized {
        id: Value,
    },
    Eof,
    Io(io::Error),
}

enum Step {
    Line,
    More,
    EndDiscard,
    Oversized { ends_here: bool },
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
        self.start_writer();
        match &item {
            JsonRpcMessage::Response(response) => {
                self.in_flight.remove(&response.id);
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.in_flight.remove(id);
                }
            }
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
        }
        let outbox = Arc::clone(&self.outbox);
        let tools = self.tools.clone();
        async move {
            // Serialized in the sending task, so large results do not hold up the others.
            let mut bytes = listing::to_vec(&item, tools.as_deref())?;
            bytes.push(b'\n');
            let ticket = outbox.push(&bytes)?;
            outbox.written(ticket).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.start_writer();
        loop {
            // Back-pressure: nothing more is read while the client leaves its answers unread.
            // Cancellation-safe (rmcp polls this inside `select!`): waiting consumes nothing.
            if !self.outbox.wait_for_room(self.max_outbox_bytes).await {
                return None;
            }
            if self.held.is_some() {
                if self.in_flight.len() < self.max_in_flight {
                    let held = self.held.take().expect("checked above");
                    return Some(self.admit(held));
                }
                // Full: wait until rmcp sends an answer, which drops this future and calls
                // `receive` again. Reading stops meanwhile, so the client's writes block.
                std::future::pending::<()>().await;
            }
            match self.next_line().await {
                LineRead::Line => {}
                LineRead::Oversized { id } => {
                    tracing::warn!(
                        max_line_bytes = self.max_line_bytes,
                        "refused a message longer than the line limit"
                    );
                    self.outbox.answer(
                        id,
                        INVALID_REQUEST,
                        format!(
                            "Invalid Request: the message is longer than {} bytes",
                            self.max_line_bytes
                        ),
                        Some(json!({ "max_line_bytes": self.max_line_bytes })),
                    );
                    continue;
                }
                LineRead::Eof => return None,
                LineRead::Io(error) => {
                    tracing::error!(%error, "cannot read from the client");
                    return None;
                }
            }
            let parsed = parse_line(&self.line);
            self.line.clear();
            match parsed {
                Parsed::Message(message) => {
                    let request_id = match &*message {
                        JsonRpcMessage::Request(request) => Some(request.id.clone()),
                        _ => None,
                    };
                    let Some(id) = request_id else {
                        if !self.started {
                            tracing::debug!("ignoring a message that precedes the session");
                            continue;
                        }
                        return Some(self.admit(message));
                    };
                    if self.in_flight.contains(&id) {
                        tracing::debug!(%id, "refusing a request whose id is in flight");
                        self.outbox.answer(
                            serde_json::to_value(&id).unwrap_or(Value::Null),
                            INVALID_REQUEST,
                            format!("Invalid Request: request id {id} is already in flight"),
                            Some(json!({ "field": "id" })),
                        );
                        continue;
                    }
                    if self.in_flight.len() >= self.max_in_flight {
                        self.held = Some(message);
                        continue;
                    }
                    return Some(self.admit(message));
                }
                Parsed::Skip => {}
                Parsed::Answer {
                    id,
                    code,
                    message,
                    data,
                } => {
                    tracing::debug!(code, %message, "answering an unusable message");
                    self.outbox.answer(id, code, message, data);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.outbox.close();
        match std::mem::replace(&mut self.writer, Writer::Gone) {
            Writer::Running(mut task) => {
                if tokio::time::timeout(CLOSE_GRACE, &mut task).await.is_err() {
                    tracing::warn!("the client stopped reading; dropping unsent messages");
                    task.abort();
                }
            }
            Writer::Idle(_) | Writer::Gone => {}
        }
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

/// What to do with one line.
#[derive(Debug)]
enum Parsed {
    /// Boxed: it may wait in `LineTransport::held`.
    Message(Box<ClientJsonRpcMessage>),
    /// Blank, or unusable but not to be answered (a notification or a response).
    Skip,
    Answer {
        id: Value,
        code: i64,
        message: String,
        data: Option<Value>,
    },
}

fn parse_line(line: &[u8]) -> Parsed {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.trim_ascii();
    if line.is_empty() {
        return Parsed::Skip;
    }
    if let Some(call) = call_parse::tools_call(line) {
        return Parsed::Message(Box::new(call));
    }
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => return Parsed::Message(Box::new(message)),
        Err(error) => error,
    };
    if is_too_deep(&error) {
        // Possibly valid JSON, only deeper than serde_json recurses (128): refused without
        // parsing it again, naming the request when its id comes first.
        return Parsed::Answer {
            id: leading_id(line),
            code: INVALID_REQUEST,
            message: "Invalid Request: JSON nested deeper than 128 levels".into(),
            data: Some(json!({ "max_depth": 128 })),
        };
    }
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(value) => value,
        Err(error) => {
            return Parsed::Answer {
                id: Value::Null,
                code: PARSE_ERROR,
                message: format!("Parse error: {error}"),
                data: None,
            };
        }
    };
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Parsed::Answer {
                id: Value::Null,
                code: INVALID_REQUEST,
                message: "Invalid Request: batches are not supported; send one message per line"
                    .into(),
                data: None,
            };
        }
        _ => {
            return Parsed::Answer {
                id: Value::Null,
                code: INVALID_REQUEST,
                message: "Invalid Request: a JSON-RPC message is an object".into(),
                data: None,
            };
        }
    };
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number());
    let has_method = object.contains_key("method");
    let is_response = object.contains_key("result") || object.contains_key("error");
    if (has_method && !object.contains_key("id")) || (is_response && !has_method) {
        // JSON-RPC never answers a notification, and a response cannot be answered.
        tracing::debug!(%error, "ignoring an invalid notification or response");
        return Parsed::Skip;
    }
    if let (Some(id), Some(params)) = (id, object.get("params"))
        && has_method
        && !params.is_object()
    {
        // JSON-RPC allows positional params; MCP does not.
        return Parsed::Answer {
            id: id.clone(),
            code: INVALID_PARAMS,
            message: "Invalid params: MCP params are an object".into(),
            data: Some(json!({ "field": "params" })),
        };
    }
    Parsed::Answer {
        id: id.cloned().unwrap_or(Value::Null),
        code: INVALID_REQUEST,
        message: format!("Invalid Request: {error}"),
        data: None,
    }
}

fn is_too_deep(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("recursion limit exceeded")
}

/// Whether rmcp leaves its initialization loop on `request`: `initialize`, or a 2026-07-28
/// request (other than `ping` and `server/discover`) carrying the per-request metadata.
fn opens_session(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.protocol_version().is_some()
                && meta
                    .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
        }
    }
}

/// The `id` member of the JSON object that `head` starts with, when it is a string or a number
/// and appears before the head is cut off; `null` otherwise.
fn leading_id(head: &[u8]) -> Value {
    scan_leading_id(head).unwrap_or(Value::Null)
}

fn scan_leading_id(head: &[u8]) -> Option<Value> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let mut at = skip_ws(head, 0);
    if head.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_ws(head, at);
        let key_end = skip_string(head, at)?;
        let is_id = &head[at..key_end] == b"\"id\"";
        at = skip_ws(head, key_end);
        if head.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(head, at + 1);
        let value_end = skip_value(head, at)?;
        if is_id {
            let id: Value = serde_json::from_slice(&head[at..value_end]).ok()?;
            return (id.is_string() || id.is_number()).then_some(id);
        }
        at = skip_ws(head, value_end);
        match head.get(at) {
            Some(b',') => at += 1,
            _ => return None,
        }
    }
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The index after the string starting at `at`, if it is complete.
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index after the value starting at `at`, if it is complete.
fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => skip_string(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = skip_string(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            Some(at + len)
        }
    }
}

/// Messages waiting for the writer task, and how far it got.
struct Outbox {
    state: Mutex<OutboxState>,
    wake: Notify,
    progress: watch::Sender<Written>,
}

#[derive(Default)]
struct OutboxState {
    buffer: Vec<u8>,
    /// Bytes queued and not written yet: `buffer` plus the burst being written.
    unsent: usize,
    /// Messages ever queued; a message's ticket is the count after queueing it.
    queued: u64,
    closed: bool,
    failure: Option<(io::ErrorKind, String)>,
}

#[derive(Clone, Copy, Default)]
struct Written {
    /// Tickets up to this one are written and flushed.
    upto: u64,
    failed: bool,
}

impl Outbox {
    fn new() -> Self {
        Self {
            state: Mutex::new(OutboxState::default()),
            wake: Notify::new(),
            progress: watch::Sender::new(Written::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OutboxState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues one framed message; its ticket resolves once it is written.
    fn push(&self, bytes: &[u8]) -> io::Result<u64> {
        let ticket = {
            let mut state = self.lock();
            if let Some((kind, message)) = &state.failure {
                return Err(io::Error::new(*kind, message.clone()));
            }
            if state.closed {
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            }
            state.buffer.extend_from_slice(bytes);
            state.unsent += bytes.len();
            state.queued += 1;
            state.queued
        };
        self.wake.notify_one();
        Ok(ticket)
    }

    /// Queues a JSON-RPC error answer without waiting for it: a failure to write it shows up on
    /// the next `send` anyway.
    fn answer(&self, id: Value, code: i64, message: String, data: Option<Value>) {
        let mut error = json!({ "code": code, "message": message });
        if let Some(data) = data {
            error["data"] = data;
        }
        let answer = json!({ "jsonrpc": "2.0", "id": id, "error": error });
        let mut bytes = answer.to_string().into_bytes();
        bytes.push(b'\n');
        if let Err(error) = self.push(&bytes) {
            tracing::debug!(%error, "cannot answer: the output is gone");
        }
    }

    async fn written(&self, ticket: u64) -> io::Result<()> {
        let mut progress = self.progress.subscribe();
        let written = *progress
            .wait_for(|written| written.upto >= ticket || written.failed)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the writer stopped"))?;
        if written.upto >= ticket {
            return Ok(());
        }
        let state = self.lock();
        let (kind, message) = state
            .failure
            .clone()
            .unwrap_or((io::ErrorKind::BrokenPipe, "the writer stopped".into()));
        Err(io::Error::new(kind, message))
    }

    /// Waits until at most `max` bytes wait to be written; `false` when they never will be
    /// (the writer failed or stopped). Cancellation-safe.
    async fn wait_for_room(&self, max: usize) -> bool {
        let mut progress = self.progress.subscribe();
        let waited = progress
            .wait_for(|written| written.failed || self.lock().unsent <= max)
            .await;
        matches!(waited, Ok(written) if !written.failed)
    }

    fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }
}

/// Writes whatever is queued, one write and one flush per burst, until closed.
async fn write_loop<W: AsyncWrite + Unpin>(outbox: Arc<Outbox>, mut write: W) {
    let mut burst = Vec::new();
    loop {
        let (upto, closed) = {
            let mut state = outbox.lock();
            std::mem::swap(&mut state.buffer, &mut burst);
            (state.queued, state.closed)
        };
        if !burst.is_empty() {
            let result = async {
                write.write_all(&burst).await?;
                write.flush().await
            }
            .await;
            if let Err(error) = result {
                tracing::debug!(%error, "cannot write to the client");
                outbox.lock().failure = Some((error.kind(), error.to_string()));
                outbox.progress.send_modify(|written| written.failed = true);
                return;
            }
            {
                let mut state = outbox.lock();
                state.unsent = state.unsent.saturating_sub(burst.len());
            }
            burst.clear();
            if burst.capacity() > KEEP_WRITE_CAPACITY {
                burst = Vec::new();
            }
            outbox.progress.send_modify(|written| written.upto = upto);
            // More may have been queued meanwhile: that is the next burst.
            continue;
        }
        if closed {
            let _ = write.shutdown().await;
            return;
        }
        outbox.wake.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_id_at_the_start_of_a_cut_line() {
        let head =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"text":"aaaa"#;
        assert_eq!(leading_id(head), json!(7));
        let head = br#" {"id" : "req-1", "params": {"#;
        assert_eq!(leading_id(head), json!("req-1"));
        let head = br#"{"method":"x","params":{"id":3,"nested":[1,{"id":4}]},"id":"late"}"#;
        assert_eq!(leading_id(head), json!("late"));
    }

    #[test]
    fn gives_up_on_ids_it_cannot_see() {
        assert_eq!(
            leading_id(br#"{"method":"tools/call","params":{"a":"xx"#),
            Value::Null
        );
        assert_eq!(leading_id(br#"{"id":{"x":1}}"#), Value::Null);
        assert_eq!(leading_id(br#"{"id":nul"#), Value::Null);
        assert_eq!(leading_id(b"not json"), Value::Null);
        assert_eq!(leading_id(br#"{"a\"id":1,"#), Value::Null);
    }

    fn answer(parsed: Parsed) -> (Value, i64) {
        match parsed {
            Parsed::Answer { id, code, .. } => (id, code),
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn classifies_unusable_lines() {
        assert_eq!(answer(parse_line(b"{not json")), (Value::Null, PARSE_ERROR));
        assert_eq!(answer(parse_line(b"\xff\xfe")), (Value::Null, PARSE_ERROR));
        assert_eq!(answer(parse_line(b"[1,2]")), (Value::Null, INVALID_REQUEST));
        assert_eq!(answer(parse_line(b"42")), (Value::Null, INVALID_REQUEST));
        assert_eq!(
            answer(parse_line(br#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#)),
            (json!(5), INVALID_REQUEST)
        );
        assert_eq!(
            answer(parse_line(br#"{"jsonrpc":"2.0","id":"a"}"#)),
            (json!("a"), INVALID_REQUEST)
        );
        assert_eq!(
            answer(parse_line(
                br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[1]}"#
            )),
            (json!(6), INVALID_PARAMS)
        );
        // Structs serde could read positionally from arrays are still refused.
        assert_eq!(
            answer(parse_line(
                br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[null,"lookup"]}"#
            )),
            (json!(7), INVALID_PARAMS)
        );
        assert_eq!(
            answer(parse_line(br#"["2.0",8,"tools/call",{"name":"lookup"}]"#)),
            (Value::Null, INVALID_REQUEST)
        );
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"1.0","method":"notifications/x"}"#),
            Parsed::Skip
        ));
        assert!(matches!(parse_line(b"  \r"), Parsed::Skip));
        assert!(matches!(
            parse_line(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r"),
            Parsed::Message(_)
        ));
    }
}
