//! The writing side: messages queued by rmcp's tasks, written by one task in bursts (one write
//! and one flush for everything queued meanwhile), with the count of bytes not yet written that
//! lets the reading side stop when a client does not read its answers.

use std::{
    io,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::model::ErrorCode;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncWrite, AsyncWriteExt},
    sync::{Notify, watch},
    task::JoinHandle,
};

use crate::sync::lock;

/// How long `close` waits for queued messages to reach the peer.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// The write buffer is given back to the allocator when a burst left it larger than this.
const KEEP_WRITE_CAPACITY: usize = 1024 * 1024;

/// The writer task, started on first use so the transport can be built outside a runtime.
pub(super) enum Writer<W> {
    Idle(W),
    Running(JoinHandle<()>),
    Gone,
}

impl<W: AsyncWrite + Unpin + Send + 'static> Writer<W> {
    /// Starts the task writing `outbox`, once.
    pub(super) fn start(&mut self, outbox: &Arc<Outbox>) {
        if let Writer::Idle(_) = self {
            let Writer::Idle(write) = std::mem::replace(self, Writer::Gone) else {
                unreachable!("checked above");
            };
            *self = Writer::Running(tokio::spawn(write_loop(Arc::clone(outbox), write)));
        }
    }

    /// Lets the task write what is queued, for a while, then stops it.
    pub(super) async fn stop(&mut self) {
        match std::mem::replace(self, Writer::Gone) {
            Writer::Running(mut task) => {
                if tokio::time::timeout(CLOSE_GRACE, &mut task).await.is_err() {
                    tracing::warn!("the client stopped reading; dropping unsent messages");
                    task.abort();
                }
            }
            Writer::Idle(_) | Writer::Gone => {}
        }
    }
}

/// Messages waiting for the writer task, and how far it got.
pub(super) struct Outbox {
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
    pub(super) fn new() -> Self {
        Self {
            state: Mutex::new(OutboxState::default()),
            wake: Notify::new(),
            progress: watch::Sender::new(Written::default()),
        }
    }

    /// Queues one framed message; its ticket resolves once it is written.
    pub(super) fn push(&self, bytes: &[u8]) -> io::Result<u64> {
        let ticket = {
            let mut state = lock(&self.state);
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
    pub(super) fn answer(&self, id: Value, code: ErrorCode, message: String, data: Option<Value>) {
        let mut error = json!({ "code": code.0, "message": message });
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

    pub(super) async fn written(&self, ticket: u64) -> io::Result<()> {
        let mut progress = self.progress.subscribe();
        let written = *progress
            .wait_for(|written| written.upto >= ticket || written.failed)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the writer stopped"))?;
        if written.upto >= ticket {
            return Ok(());
        }
        let state = lock(&self.state);
        let (kind, message) = state
            .failure
            .clone()
            .unwrap_or((io::ErrorKind::BrokenPipe, "the writer stopped".into()));
        Err(io::Error::new(kind, message))
    }

    /// Waits until at most `max` bytes wait to be written; `false` when they never will be
    /// (the writer failed or stopped). Cancellation-safe.
    pub(super) async fn wait_for_room(&self, max: usize) -> bool {
        let mut progress = self.progress.subscribe();
        let waited = progress
            .wait_for(|written| written.failed || lock(&self.state).unsent <= max)
            .await;
        matches!(waited, Ok(written) if !written.failed)
    }

    pub(super) fn close(&self) {
        lock(&self.state).closed = true;
        self.wake.notify_one();
    }
}

/// Writes whatever is queued, one write and one flush per burst, until closed.
async fn write_loop<W: AsyncWrite + Unpin>(outbox: Arc<Outbox>, mut write: W) {
    let mut burst = Vec::new();
    loop {
        let (upto, closed) = {
            let mut state = lock(&outbox.state);
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
                lock(&outbox.state).failure = Some((error.kind(), error.to_string()));
                outbox.progress.send_modify(|written| written.failed = true);
                return;
            }
            {
                let mut state = lock(&outbox.state);
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
