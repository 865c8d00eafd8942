//! `GET /sse`: a new session and its event stream. The stream's first event says where to post
//! messages; the server's messages follow as `message` events, and a comment now and then keeps
//! an idle stream open and shows whether the client is still there. The session closes when
//! the stream does (the client went away, or took no bytes of it within the write deadline, the
//! server shut down, or rmcp's session ended), or when its client leaves more unread than its
//! outbox holds.

use std::{convert::Infallible, sync::Arc};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    response::Response,
};
use futures_util::stream;
use http::{HeaderValue, StatusCode, header};
use rmcp::ServiceExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    KEEP_ALIVE, Legacy, MESSAGES_PATH,
    outbox::Outbox,
    table::{Session, Table},
    transport::SessionTransport,
};
use crate::transport::http::refusal;

/// Client messages queued on their way to rmcp; a full queue makes a `POST` wait, within its
/// deadline. (What goes the other way waits in the session's [`Outbox`].)
const INBOUND: usize = 64;

pub(super) async fn open(State(legacy): State<Arc<Legacy>>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    if let Some(refused) = legacy.allowed.refusal(&parts.uri, &parts.headers) {
        return refused;
    }
    let context = match legacy.authenticate(&parts).await {
        Ok(context) => context,
        Err(refused) => return refused,
    };
    let ticket = match legacy.sessions.reserve(context.principal()) {
        Ok(ticket) => ticket,
        Err(full) => return refusal::sessions_full(full, None, legacy.idle_timeout),
    };
    let id = session_id();
    let (inbound, incoming) = mpsc::channel(INBOUND);
    let session = Arc::new(Session::new(
        context.principal().map(Arc::from),
        inbound,
        legacy.max_outbox_bytes,
        ticket,
    ));
    let outbox = Arc::clone(&session.outbox);
    legacy.table.insert(id.clone(), Arc::clone(&session));
    tracing::debug!(session = %id, "legacy SSE session opened");

    let server = legacy.server.for_session();
    let closed = session.closed.clone();
    let transport = SessionTransport {
        incoming,
        outbox: Arc::clone(&outbox),
    };
    tokio::spawn(async move {
        let running = tokio::select! {
            started = server.serve(transport) => match started {
                Ok(running) => running,
                Err(error) => {
                    tracing::debug!(%error, "a legacy SSE session did not start");
                    return;
                }
            },
            () = closed.cancelled() => return,
        };
        let stop = running.cancellation_token();
        tokio::select! {
            _ = running.waiting() => {}
            () = closed.cancelled() => stop.cancel(),
        }
    });

    let events = Events {
        endpoint: Some(format!("{MESSAGES_PATH}?sessionId={id}")),
        outbox,
        session,
        shutdown: legacy.close.clone(),
        _closing: Closing {
            table: Arc::clone(&legacy.table),
            id,
        },
    };
    let body = Body::from_stream(stream::unfold(events, Events::next));
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A session's event stream.
struct Events {
    /// The first event's data, until sent.
    endpoint: Option<String>,
    outbox: Arc<Outbox>,
    session: Arc<Session>,
    shutdown: CancellationToken,
    _closing: Closing,
}

impl Events {
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Self)> {
        if let Some(endpoint) = self.endpoint.take() {
            return Some((Ok(event("endpoint", &endpoint)), self));
        }
        let event = tokio::select! {
            event = self.outbox.next() => event?,
            () = self.session.closed.cancelled() => return None,
            () = self.shutdown.cancelled() => return None,
            () = tokio::time::sleep(KEEP_ALIVE) => Bytes::from_static(b": keep-alive\n\n"),
        };
        Some((Ok(event), self))
    }
}

/// One server-sent event; `data` holds no newline (a path).
fn event(name: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// Closes its session when the stream ends or is dropped (the client went away).
struct Closing {
    table: Arc<Table>,
    id: String,
}

impl Drop for Closing {
    fn drop(&mut self) {
        tracing::debug!(session = %self.id, "legacy SSE session closed");
        self.table.close(&self.id);
    }
}

/// 128 random bits, in hex: not guessable, and safe in a query string.
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random number generator");
    hex::encode(bytes)
}
