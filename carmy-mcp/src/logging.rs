//! Protocol logging: the `tracing` events emitted while a request is served (the tool's own
//! `tracing::info!` included) go to the client that made it, as `notifications/message`.
//!
//! A client chooses the least severe level it wants: with `logging/setLevel` for its session
//! (2025-11-25 and older), or per request in `_meta["io.modelcontextprotocol/logLevel"]`
//! (2026-07-28). Until it does, nothing is sent. The events are collected by
//! [`ClientLogLayer`], which a binary adds to its `tracing` subscriber (`carmy::cli` does), and
//! sent from the request's own task before its answer, so none trails it. What is sent is the
//! event's own fields, never the request's arguments (a tool that logs them chose to), each
//! escaped by JSON and cut short; a chatty request is bounded by a token bucket, and what it
//! drops is counted in one last message.
//!
//! rmcp marks MCP's logging types deprecated (SEP-2577 retires protocol logging in a revision
//! after 2026-07-28); the revisions served here both have it, and their clients use it.
#![allow(deprecated)]

use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Instant,
};

use rmcp::{
    Peer, RoleServer,
    model::{LoggingLevel, LoggingMessageNotificationParam},
};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tracing::{Event, Level, Subscriber, field::Field};
use tracing_subscriber::layer::{Context as LayerContext, Layer};

use crate::sync::lock;

/// The longest field value sent, in bytes; longer ones are cut.
const MAX_FIELD_BYTES: usize = 1024;
/// Messages a request may send at once, and per second after that.
const BURST: f64 = 50.0;
const PER_SECOND: f64 = 20.0;

tokio::task_local! {
    /// Where the events of the request being served go.
    static REQUEST_LOG: Arc<RequestLog>;
}

/// The `tracing` layer that forwards events to the client of the request they belong to. Add
/// it to the subscriber of a binary that serves MCP:
///
/// ```no_run
/// use tracing_subscriber::prelude::*;
///
/// tracing_subscriber::registry()
///     .with(carmy_mcp::ClientLogLayer)
///     .init();
/// ```
///
/// Events outside a request, or in a request whose client asked for no log, cost a
/// task-local lookup.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientLogLayer;

impl<S: Subscriber> Layer<S> for ClientLogLayer {
    fn on_event(&self, event: &Event<'_>, _: LayerContext<'_, S>) {
        let _ = REQUEST_LOG.try_with(|log| log.offer(event));
    }
}

/// The log of one request: the least severe level wanted, the budget left, and the queue the
/// request's task drains.
struct RequestLog {
    threshold: LoggingLevel,
    queue: Mutex<Queue>,
}

struct Queue {
    sender: Option<mpsc::UnboundedSender<LoggingMessageNotificationParam>>,
    tokens: f64,
    refilled: Instant,
    dropped: u64,
}

impl RequestLog {
    fn offer(&self, event: &Event<'_>) {
        let level = level_of(*event.metadata().level());
        if severity(level) < severity(self.threshold) {
            return;
        }
        let mut queue = lock(&self.queue);
        let Some(sender) = queue.sender.clone() else {
            return;
        };
        let now = Instant::now();
        let refill = now.duration_since(queue.refilled).as_secs_f64() * PER_SECOND;
        queue.tokens = (queue.tokens + refill).min(BURST);
        queue.refilled = now;
        if queue.tokens < 1.0 {
            queue.dropped += 1;
            return;
        }
        queue.tokens -= 1.0;
        drop(queue);
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        let mut message = LoggingMessageNotificationParam::new(level, Value::Object(fields.0));
        message.logger = Some(event.metadata().target().to_owned());
        let _ = sender.send(message);
    }

    /// No message may follow the answer; what was dropped is said once.
    fn close(&self) -> u64 {
        let mut queue = lock(&self.queue);
        queue.sender = None;
        queue.dropped
    }
}

/// Runs `request` with its events forwarded to `peer` at `threshold` and above (nothing when
/// `None`), and returns once every message it logged has been sent.
pub(crate) async fn with_client_log<F: Future>(
    peer: &Peer<RoleServer>,
    threshold: Option<LoggingLevel>,
    request: F,
) -> F::Output {
    let Some(threshold) = threshold else {
        return request.await;
    };
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let log = Arc::new(RequestLog {
        threshold,
        queue: Mutex::new(Queue {
            sender: Some(sender),
            tokens: BURST,
            refilled: Instant::now(),
            dropped: 0,
        }),
    });
    let run = async {
        let output = REQUEST_LOG.scope(Arc::clone(&log), request).await;
        let dropped = log.close();
        (output, dropped)
    };
    let forward = async {
        while let Some(message) = receiver.recv().await {
            if let Err(error) = peer.notify_logging_message(message).await {
                tracing::debug!(%error, "cannot send a log message");
                break;
            }
        }
    };
    let ((output, dropped), ()) = tokio::join!(run, forward);
    if dropped > 0 {
        let note = serde_json::json!({
            "message": format!("{dropped} log messages of this request were dropped (at most {BURST} at once, {PER_SECOND} a second)"),
        });
        // A warning, or the least the client wants if that is more severe: it always arrives.
        let level = if severity(threshold) > severity(LoggingLevel::Warning) {
            threshold
        } else {
            LoggingLevel::Warning
        };
        let mut message = LoggingMessageNotificationParam::new(level, note);
        message.logger = Some("carmy".into());
        let _ = peer.notify_logging_message(message).await;
    }
    output
}

/// `tracing`'s levels on MCP's eight (`notice`, `critical`, `alert` and `emergency` have no
/// `tracing` counterpart).
fn level_of(level: Level) -> LoggingLevel {
    match level {
        Level::ERROR => LoggingLevel::Error,
        Level::WARN => LoggingLevel::Warning,
        Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// MCP's levels, least severe first (RFC 5424's order).
pub(crate) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// An event's fields as JSON, each value cut short.
struct Fields(Map<String, Value>);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.insert(field, format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.insert(field, value.to_owned());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        // JSON has no NaN or infinity: those stay text.
        match serde_json::Number::from_f64(value) {
            Some(number) => {
                self.0
                    .insert(field.name().to_owned(), Value::Number(number));
            }
            None => self.insert(field, value.to_string()),
        }
    }
}

impl Fields {
    fn insert(&mut self, field: &Field, mut text: String) {
        if text.len() > MAX_FIELD_BYTES {
            let mut cut = MAX_FIELD_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let length = text.len();
            text.truncate(cut);
            text.push_str(&format!("… ({length} bytes)"));
        }
        self.0.insert(field.name().to_owned(), Value::String(text));
    }
}
