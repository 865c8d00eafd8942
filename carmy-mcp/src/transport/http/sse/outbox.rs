//! What waits for a session's client to read it: the server's messages, each made into its
//! event once, as rmcp hands it over, and counted in bytes.
//!
//! rmcp hands a message over without waiting: were the hand-over to wait for the client, rmcp
//! would hold each message meanwhile in a task of its own, beyond any bound. So the bound
//! ([`HttpServer::max_outbox_bytes`](crate::HttpServer::max_outbox_bytes)) is kept here, as a
//! slow consumer's output is bounded elsewhere (Redis's client output buffers): once half of it
//! waits, the client is behind, and the session takes no new request (`deliver.rs` refuses it
//! `429`) and drops its notifications (progress, a log line, a resource changed) rather than
//! queue them. An answer to a request already taken (or a question to the client) is queued
//! while it fits; one that would take the outbox past the bound closes the session instead,
//! since its client is not reading: what waits is dropped, the stream ends, and the session's
//! calls are cancelled with it. One message larger than the bound is still queued when nothing
//! else waits.

use std::{collections::VecDeque, pin::pin, sync::Mutex};

use axum::body::Bytes;
use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// The events waiting for one session's stream.
pub(super) struct Outbox {
    max_bytes: usize,
    queue: Mutex<Queue>,
    /// An event was queued, or the outbox closed.
    ready: Notify,
    /// Closes the session, when its client leaves too much unread: its stream may not be
    /// polled again to end by itself (the connection waits for the client).
    session: CancellationToken,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<Bytes>,
    bytes: usize,
    closed: bool,
}

/// The session's stream has ended (or is ending): nothing more goes out on it.
#[derive(Debug, thiserror::Error)]
#[error("the session's event stream has ended")]
pub(super) struct StreamEnded;

impl Outbox {
    /// An outbox of at most `max_bytes`; past them, `session` is cancelled.
    pub(super) fn new(max_bytes: usize, session: CancellationToken) -> Self {
        Self {
            max_bytes,
            queue: Mutex::default(),
            ready: Notify::new(),
            session,
        }
    }

    /// Bytes waiting past which the client is behind.
    fn behind_at(&self) -> usize {
        self.max_bytes / 2
    }

    /// Whether the client is behind (half the bound waits): then no new request is taken.
    pub(super) fn is_behind(&self) -> bool {
        lock(&self.queue).bytes >= self.behind_at()
    }

    /// Queues `message` as a `message` event. A notification is dropped while the client is
    /// behind; any other message that would take the outbox past the bound closes it (and
    /// with it the session) instead.
    pub(super) fn push(&self, message: &ServerJsonRpcMessage) -> Result<(), StreamEnded> {
        let event = match event_of(message) {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(%error, "a server message could not be serialized");
                return Ok(());
            }
        };
        let mut queue = lock(&self.queue);
        if queue.closed {
            return Err(StreamEnded);
        }
        let after = queue.bytes + event.len();
        if !queue.events.is_empty() {
            if matches!(message, JsonRpcMessage::Notification(_)) && after > self.behind_at() {
                tracing::debug!("a notification was dropped: its client is behind");
                return Ok(());
            }
            if after > self.max_bytes {
                tracing::warn!(
                    max_outbox_bytes = self.max_bytes,
                    "a legacy SSE client left its stream unread past the bound: closing its session"
                );
                *queue = Queue {
                    closed: true,
                    ..Queue::default()
                };
                drop(queue);
                self.ready.notify_one();
                self.session.cancel();
                return Err(StreamEnded);
            }
        }
        queue.bytes = after;
        queue.events.push_back(event);
        drop(queue);
        self.ready.notify_one();
        Ok(())
    }

    /// The next event once one waits; `None` once the outbox is closed and empty.
    /// Cancellation-safe: an event is taken only when it is returned.
    pub(super) async fn next(&self) -> Option<Bytes> {
        loop {
            let ready = pin!(self.ready.notified());
            {
                let mut queue = lock(&self.queue);
                if let Some(event) = queue.events.pop_front() {
                    queue.bytes -= event.len();
                    return Some(event);
                }
                if queue.closed {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// Nothing more is queued; what waits is still taken.
    pub(super) fn close(&self) {
        lock(&self.queue).closed = true;
        self.ready.notify_one();
    }
}

/// `message` as one server-sent event: compact JSON holds no newline. Its buffer is cut to its
/// length, so that what the outbox counts is what it holds.
fn event_of(message: &ServerJsonRpcMessage) -> serde_json::Result<Bytes> {
    let mut event = b"event: message\ndata: ".to_vec();
    serde_json::to_writer(&mut event, message)?;
    event.extend_from_slice(b"\n\n");
    Ok(Bytes::from(event.into_boxed_slice()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(id: i64) -> ServerJsonRpcMessage {
        serde_json::from_value(json!({ "jsonrpc": "2.0", "id": id, "result": {} })).unwrap()
    }

    fn progress() -> ServerJsonRpcMessage {
        serde_json::from_value(json!({
            "jsonrpc": "2.0", "method": "notifications/progress",
            "params": { "progressToken": 1, "progress": 1 }
        }))
        .unwrap()
    }

    async fn drain(outbox: &Outbox) -> Vec<String> {
        let mut taken = Vec::new();
        while let Some(event) = outbox.next().await {
            taken.push(String::from_utf8(event.to_vec()).unwrap());
        }
        taken
    }

    #[tokio::test]
    async fn a_client_behind_gets_its_answers_and_no_notifications() {
        let one = event_of(&answer(1)).unwrap().len();
        let outbox = Outbox::new(one * 4, CancellationToken::new());
        // Alone, anything goes.
        outbox.push(&progress()).unwrap();
        outbox.next().await.expect("the notification");
        outbox.push(&answer(1)).unwrap();
        assert!(!outbox.is_behind());
        outbox.push(&answer(2)).unwrap();
        assert!(outbox.is_behind(), "half the bound waits");
        outbox.push(&progress()).unwrap();
        outbox.push(&answer(3)).unwrap();
        outbox.close();
        assert!(outbox.push(&answer(4)).is_err(), "closed");
        let taken = drain(&outbox).await;
        assert_eq!(
            taken.len(),
            3,
            "the answers, not the notification: {taken:?}"
        );
        assert!(
            taken
                .iter()
                .all(|event| event.starts_with("event: message\ndata: {\"jsonrpc\""))
        );
        assert!(!outbox.is_behind());
    }

    #[tokio::test]
    async fn an_answer_past_the_bound_closes_the_outbox_and_drops_what_waits() {
        let one = event_of(&answer(1)).unwrap().len();
        let session = CancellationToken::new();
        let outbox = Outbox::new(one * 2, session.clone());
        for id in 1..=2 {
            outbox.push(&answer(id)).unwrap();
        }
        assert!(!session.is_cancelled());
        assert!(outbox.push(&answer(3)).is_err());
        assert!(session.is_cancelled(), "the session is closed");
        assert!(drain(&outbox).await.is_empty());
        assert!(outbox.push(&answer(4)).is_err());

        // One larger than the bound goes when nothing else waits.
        let outbox = Outbox::new(one / 2, CancellationToken::new());
        outbox.push(&answer(1)).unwrap();
        assert_eq!(outbox.next().await.map(|event| event.len()), Some(one));
    }
}
