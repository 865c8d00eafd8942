//! The call thread: a second rmcp service for the session, on a thread and a current-thread
//! runtime of its own, that runs some of the session's `tools/call` and `resources/read`
//! requests (both "calls" below: the requests that do a tool's or a resource's work).
//!
//! One stdio session is served by one serve loop, from one thread, so a second core would sit
//! idle however many calls the client has in flight. The reader hands the call thread a call's
//! line, as bytes; the call thread parses it, runs it on its own service, serializes the answer
//! and queues its bytes in the session's outbox. Only bytes cross between the threads: a call's
//! allocations are made and freed on one thread, and nothing in the call waits for the other
//! (`bench/README.md`, "Using the second core", measures the hand-over).
//!
//! Both services share the reader's `Flow`, behind a lock: it gives out the ids both use and
//! knows which service runs each request, so duplicates, cancellations, the in-flight bound and
//! the client's answers to the server's questions work across the two as within one.

use std::{
    future::Future,
    io,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use rmcp::{
    ErrorData, RoleServer, Service as RmcpService,
    model::{
        ClientJsonRpcMessage, ClientNotification, ClientRequest, InitializeRequestParams,
        JsonRpcMessage, RequestId, ServerConfig, ServerJsonRpcMessage, ServerResult,
    },
    service::{NotificationContext, RequestContext, serve_directly},
    transport::Transport,
};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{
    ToolsPage, call_parse,
    classify::{Parsed, parse_line},
    flow::{Flow, Lifecycle, Service},
    outbox::Outbox,
    scratch,
};
use crate::sync::lock;

/// How long closing the session waits for the call thread to answer its last calls: rmcp gives
/// a closed session's handlers 5 s to answer, and the call thread closes with the loop.
const FINISH_GRACE: Duration = Duration::from_secs(6);
/// Line buffers kept for reuse, at most: as many as calls usually wait for the call thread.
const MAX_SPARE_LINES: usize = 64;
/// A line buffer larger than this is freed rather than kept.
const MAX_SPARE_LINE_BYTES: usize = 16 * 1024;

/// Where a session served on stdio or a byte stream runs its `tools/call` and `resources/read`
/// requests ([`McpServer::call_thread`](crate::McpServer::call_thread)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallThread {
    /// All on the serve loop's thread.
    Off,
    /// While other requests are in flight, calls also run on a second thread of the session's
    /// own, which takes most of them (the serve loop's thread also reads and writes); a call
    /// made alone runs on the serve loop, with nothing handed over.
    WhenBusy,
    /// Every call runs on the second thread; the serve loop reads, writes and serves the other
    /// requests.
    Always,
}

/// What the line transport and its call thread share.
#[derive(Default)]
pub(super) struct Shared {
    /// Set once the call thread serves.
    running: OnceLock<Running>,
    /// Woken when the call thread answers a request: there is room for a waiting one.
    pub(super) answered: Notify,
    /// Line buffers the call thread is done with, for the reader to fill again: a buffer
    /// allocated on one thread and freed on the other costs the allocator more than the call's
    /// other allocations together.
    spare_lines: Mutex<Vec<Vec<u8>>>,
}

/// The call thread, as the reader sees it.
struct Running {
    inbox: mpsc::UnboundedSender<ToCallThread>,
    /// Cancelled when the client's input ends: the call thread answers what it has and stops.
    stop: CancellationToken,
    done: Mutex<Option<oneshot::Receiver<()>>>,
}

/// A message for the call thread's service.
enum ToCallThread {
    /// The line of a `tools/call`, handed over under our id `ours`.
    Call { line: Vec<u8>, ours: i64 },
    /// A cancellation of one of its calls, or the client's answer to one of its requests:
    /// rare, boxed so that a call's slot in the channel stays small.
    Message(Box<ClientJsonRpcMessage>),
}

impl Shared {
    /// Whether the call thread serves.
    pub(super) fn is_running(&self) -> bool {
        self.running.get().is_some()
    }

    /// Hands the call thread (a copy of) `line`, the call `ours`; `false` when the thread is
    /// gone (it failed), for the loop to serve the call.
    pub(super) fn call(&self, line: &[u8], ours: i64) -> bool {
        let Some(running) = self.running.get() else {
            return false;
        };
        let mut copy = lock(&self.spare_lines).pop().unwrap_or_default();
        copy.extend_from_slice(line);
        let call = ToCallThread::Call { line: copy, ours };
        running.inbox.send(call).is_ok()
    }

    /// Keeps `line` for another call, unless it grew large or enough are kept.
    fn spare(&self, mut line: Vec<u8>) {
        line.clear();
        let mut spare = lock(&self.spare_lines);
        if line.capacity() <= MAX_SPARE_LINE_BYTES && spare.len() < MAX_SPARE_LINES {
            spare.push(line);
        }
    }

    /// Passes the call thread a cancellation of one of its calls or an answer to its request.
    pub(super) fn message(&self, message: ClientJsonRpcMessage) {
        if let Some(running) = self.running.get()
            && running
                .inbox
                .send(ToCallThread::Message(Box::new(message)))
                .is_err()
        {
            tracing::debug!("the call thread is gone; dropping a message for it");
        }
    }

    /// The client's input ended: the call thread answers what it has, then stops.
    pub(super) fn stop(&self) {
        if let Some(running) = self.running.get() {
            running.stop.cancel();
        }
    }

    /// Waits (a while) until the call thread has answered what it had and stopped.
    pub(super) async fn finish(&self) {
        let Some(running) = self.running.get() else {
            return;
        };
        running.stop.cancel();
        let done = lock(&running.done).take();
        if let Some(done) = done
            && tokio::time::timeout(FINISH_GRACE, done).await.is_err()
        {
            tracing::warn!("the call thread did not finish in time; closing without it");
        }
    }
}

/// Starts a session's call thread once the session is open ([`LineTransport::call_thread`]).
///
/// [`LineTransport::call_thread`]: super::LineTransport
pub(crate) struct Starter {
    pub(super) flow: Arc<Mutex<Flow>>,
    pub(super) outbox: Arc<Outbox>,
    pub(super) page: Arc<ToolsPage>,
    pub(super) shared: Arc<Shared>,
}

impl Starter {
    /// Serves `service` on the call thread, for a client that initialized with `peer_info`.
    ///
    /// Only a session opened with `initialize` gets one: a 2026-07-28 session's lifecycle is
    /// kept on rmcp's peer, privately, so a second service could not follow it, and its calls
    /// stay on the loop.
    pub(crate) fn start<S>(self, service: S, peer_info: Option<InitializeRequestParams>)
    where
        S: RmcpService<RoleServer> + Send + 'static,
    {
        if lock(&self.flow).lifecycle() != Lifecycle::Initialize {
            return;
        }
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => {
                tracing::warn!(%error, "cannot start the call thread's runtime; calls stay on the serve loop");
                return;
            }
        };
        let (inbox, calls) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let (done_tx, done) = oneshot::channel();
        let service = CallService {
            inner: service,
            flow: Arc::clone(&self.flow),
            shared: Arc::clone(&self.shared),
        };
        let transport = CallTransport {
            calls,
            stop: stop.clone(),
            flow: self.flow,
            outbox: self.outbox,
            page: self.page,
            shared: Arc::clone(&self.shared),
        };
        let spawned = std::thread::Builder::new()
            .name("carmy-calls".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let running = serve_directly(service, transport, peer_info);
                    if let Err(error) = running.waiting().await {
                        tracing::error!(%error, "the call thread's service failed");
                    }
                });
                let _ = done_tx.send(());
                // A tool's `spawn_blocking` work is not waited for: the session is over.
                runtime.shutdown_background();
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start the call thread; calls stay on the serve loop");
            return;
        }
        let running = Running {
            inbox,
            stop,
            done: Mutex::new(Some(done)),
        };
        if self.shared.running.set(running).is_err() {
            unreachable!("a session's call thread starts once");
        }
    }
}

/// The session's service on the call thread, telling the flow when each call's handler ends,
/// so that a cancelled call keeps its place in flight until then (`flow.rs`, `Run`).
struct CallService<S> {
    inner: S,
    flow: Arc<Mutex<Flow>>,
    shared: Arc<Shared>,
}

/// Tells the flow that the handler of request `ours` ended, when dropped: finished or stopped.
struct HandlerEnds<'a> {
    ours: Option<i64>,
    flow: &'a Mutex<Flow>,
    shared: &'a Shared,
}

impl Drop for HandlerEnds<'_> {
    fn drop(&mut self) {
        if let Some(ours) = self.ours
            && lock(self.flow).call_ended(ours)
        {
            self.shared.answered.notify_one();
        }
    }
}

impl<S: RmcpService<RoleServer>> RmcpService<RoleServer> for CallService<S> {
    fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ServerResult, ErrorData>> + Send + '_ {
        let ends = HandlerEnds {
            ours: match context.id {
                RequestId::Number(ours) => Some(ours),
                RequestId::String(_) => None,
            },
            flow: &self.flow,
            shared: &self.shared,
        };
        async move {
            let _ends = ends;
            self.inner.handle_request(request, context).await
        }
    }

    fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        self.inner.handle_notification(notification, context)
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

/// The call thread's side of the transport: calls in, answers out through the outbox.
struct CallTransport {
    calls: mpsc::UnboundedReceiver<ToCallThread>,
    stop: CancellationToken,
    flow: Arc<Mutex<Flow>>,
    outbox: Arc<Outbox>,
    page: Arc<ToolsPage>,
    shared: Arc<Shared>,
}

impl CallTransport {
    /// The request in the line of call `ours`, under that id; `None` when the line was not a
    /// call after all (its params do not parse), which is then answered as the loop would.
    fn request(&self, line: &[u8], ours: i64) -> Option<ClientJsonRpcMessage> {
        if let Some(request) = call_parse::work_request_as(line, ours) {
            return Some(request);
        }
        match parse_line(line) {
            Parsed::Message(incoming) => {
                if let JsonRpcMessage::Request(mut request) = incoming.message {
                    request.id = RequestId::Number(ours);
                    return Some(JsonRpcMessage::Request(request));
                }
                self.release(ours);
            }
            Parsed::Answer {
                code,
                message,
                data,
                ..
            } => {
                if let Some(id) = self.release(ours) {
                    self.outbox.answer(id.value(), code, message, data);
                }
            }
            Parsed::Skip => {
                self.release(ours);
            }
        }
        None
    }

    fn release(&self, ours: i64) -> Option<super::ids::ClientId> {
        let id = lock(&self.flow).release(ours);
        self.shared.answered.notify_one();
        id
    }
}

impl Transport<RoleServer> for CallTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        mut item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let answers = matches!(item, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_));
        let id = lock(&self.flow).sending(&mut item, Service::CallThread);
        let pushed = if answers && id.is_none() {
            // Cancelled while it ran: the loop forgot it at the cancel, and so does the answer.
            Ok(())
        } else {
            // Not waited for until written: the outbox holds the bytes, and the loop writes
            // them all before it closes, after this thread finished.
            scratch::with_line(|line| {
                self.page.write(line, item, id.as_ref())?;
                line.push(b'\n');
                self.outbox.push(line).map(drop)
            })
        };
        if answers {
            self.shared.answered.notify_one();
        }
        std::future::ready(pushed)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let next = tokio::select! {
                // What was handed over before the input ended is served first.
                biased;
                next = self.calls.recv() => next?,
                () = self.stop.cancelled() => return None,
            };
            match next {
                ToCallThread::Call { line, ours } => {
                    let request = self.request(&line, ours);
                    self.shared.spare(line);
                    if let Some(request) = request {
                        return Some(request);
                    }
                }
                ToCallThread::Message(message) => return Some(*message),
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        Ok(())
    }
}
