//! What every MCP request goes through before rmcp: authentication (a refused request never
//! reaches MCP), the request's deadline, its body read and checked, and its session: only the
//! principal that opened a session may use it, and opening one takes a place within the
//! bounds. Then the request's calls are tied to its connection and deadline. The SEP-2243
//! headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) are not checked here: rmcp checks them
//! against every `POST` body itself, with the tools' input schemas from the handler's
//! `get_tool`, and answers a mismatch `400` with `-32020`.
//!
//! A `subscriptions/listen` request (2026-07-28) opens a stream as a session's `GET` does, but
//! stands alone: every request on that revision is its own session, so a session's bounds never
//! see it. It takes a place within the bounds on sessions instead, for as long as its stream is
//! open, and its stream ends at the stream deadline as a `GET` stream does.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context as TaskContext, Poll},
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use carmy_core::Context;
use http::{HeaderMap, Method};
use http_body::{Frame, SizeHint};
use rmcp::transport::common::http_header::{HEADER_LAST_EVENT_ID, HEADER_SESSION_ID};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{
    body, refusal,
    sessions::{Activity, Entered, Sessions, Ticket, Visit},
};
use crate::{scope::RequestScope, transport::http::auth::DynAuthenticator};

pub(super) struct Guard {
    pub(super) authenticator: Option<Arc<dyn DynAuthenticator>>,
    pub(super) base: Context,
    pub(super) max_body_bytes: usize,
    pub(super) request_timeout: Duration,
    pub(super) stream_timeout: Duration,
    pub(super) idle_timeout: Duration,
    /// The bounds on sessions; and the sessions themselves unless serving statelessly.
    pub(super) sessions: Arc<Sessions>,
    pub(super) stateful: bool,
    pub(super) calls: CancellationToken,
    /// The tools, for the scopes a call of one needs.
    #[cfg(feature = "oauth")]
    pub(super) runtime: carmy_core::Runtime,
}

pub(super) async fn guard_request(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let context = match &guard.authenticator {
        Some(authenticator) => match authenticator
            .authenticate_boxed(&parts, guard.base.clone())
            .await
        {
            Ok(context) => context,
            Err(refused) => return refusal::unauthorized(&refused),
        },
        None => guard.base.clone(),
    };
    let is_stream = parts.method == Method::GET;
    let session = parts
        .headers
        .get(HEADER_SESSION_ID)
        .and_then(|value| value.to_str().ok());
    // On a session, only its owner's requests go on; they keep it from being idle.
    let activity = match session.filter(|_| guard.stateful) {
        Some(id) => {
            match guard.sessions.enter(
                id,
                context.principal(),
                visit_of(&parts.method, &parts.headers),
            ) {
                Entered::Active(activity) => Some(activity),
                Entered::Unknown => None,
                Entered::NotYours => return refusal::unknown_session(),
                Entered::StreamOpen => return refusal::stream_open(),
            }
        }
        None => None,
    };
    let opens_session = guard.stateful && session.is_none();
    let cancellation = guard.calls.child_token();
    // What the handler runs the request's calls as, and what stops them.
    parts.extensions.insert(RequestScope {
        context: context.clone(),
        cancellation: cancellation.clone(),
    });
    // Until the answer is complete, dropping this request (the client went away) cancels it.
    let dropped = cancellation.clone().drop_guard();

    if is_stream {
        // A stream answers at once and stays open: its deadline ends it (clients reconnect).
        let deadline = Instant::now() + guard.stream_timeout;
        let response = next.run(Request::from_parts(parts, body)).await;
        return guarded(
            response,
            dropped,
            cancellation,
            Expiry::End(deadline),
            Held {
                _activity: activity,
                _place: None,
            },
        );
    }

    let deadline = Instant::now() + guard.request_timeout;
    let mut place = None;
    let admitted = async {
        let body = if parts.method == Method::POST && body::is_json(&parts.headers) {
            let (bytes, message) = body::read(&parts.headers, body, guard.max_body_bytes).await?;
            #[cfg(feature = "oauth")]
            if let Some(tool) = &message.tool
                && let Some(step_up) = context.extension::<crate::transport::http::oauth::StepUp>()
                && let Some((challenge, reason)) = needs_scope(step_up, &guard.runtime, tool)
            {
                return Err(refusal::insufficient_scope(&challenge, &reason));
            }
            if (opens_session && message.initialize) || message.listen {
                let ticket = guard
                    .sessions
                    .reserve(context.principal())
                    .map_err(|full| {
                        refusal::sessions_full(full, message.id.as_ref(), guard.idle_timeout)
                    })?;
                if message.listen {
                    // Held by its stream.
                    place = Some(ticket);
                } else {
                    // The place travels with the request; the session it opens keeps it.
                    parts.extensions.insert(ticket);
                }
            }
            Body::from(bytes)
        } else {
            body
        };
        Ok::<_, Response>(next.run(Request::from_parts(parts, body)).await)
    };
    let response = match tokio::time::timeout_at(deadline, admitted).await {
        Ok(Ok(response)) => response,
        Ok(Err(refused)) => return refused,
        Err(_) => return refusal::deadline_exceeded(),
    };
    let expiry = if place.is_some() {
        Expiry::End(Instant::now() + guard.stream_timeout)
    } else {
        Expiry::Cancel(deadline)
    };
    guarded(
        response,
        dropped,
        cancellation,
        expiry,
        Held {
            _activity: activity,
            _place: place,
        },
    )
}

/// What an answer holds until it is done.
struct Held {
    /// Its session is busy.
    _activity: Option<Activity>,
    /// A stream's place within the bounds on sessions.
    _place: Option<Ticket>,
}

/// For a call of a tool the request's token may not make but another scope would allow, the
/// challenge asking for that scope (and why): the client gets a token with it and retries.
#[cfg(feature = "oauth")]
fn needs_scope(
    step_up: &crate::transport::http::oauth::StepUp,
    runtime: &carmy_core::Runtime,
    tool: &str,
) -> Option<(String, String)> {
    step_up.challenge(runtime.catalog().get(tool)?)
}

/// A `GET` opens the session's standalone stream, of which one may be open at a time, unless
/// it resumes the stream of a request (rmcp's event ids are `index/request` there): rmcp keeps
/// one such stream per request.
fn visit_of(method: &Method, headers: &HeaderMap) -> Visit {
    let resumes_request = || {
        headers
            .get(HEADER_LAST_EVENT_ID)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|id| id.contains('/'))
    };
    if method == Method::GET && !resumes_request() {
        Visit::Stream
    } else {
        Visit::Request
    }
}

fn guarded(
    response: Response,
    dropped: DropGuard,
    cancellation: CancellationToken,
    expiry: Expiry,
    held: Held,
) -> Response {
    let (parts, body) = response.into_parts();
    let at = match expiry {
        Expiry::Cancel(at) | Expiry::End(at) => at,
    };
    let body = GuardedBody {
        inner: body,
        dropped: Some(dropped),
        cancellation,
        deadline: Some(Box::pin(tokio::time::sleep_until(at))),
        end_at_deadline: matches!(expiry, Expiry::End(_)),
        expired: false,
        _held: held,
    };
    Response::from_parts(parts, Body::new(body))
}

/// What the deadline of an answer does.
enum Expiry {
    /// A request's: its calls are cancelled, and their (cancelled) answer gets a moment.
    Cancel(Instant),
    /// A stream's: it ends.
    End(Instant),
}

/// A response body that cancels its request's calls when dropped before its end (the client
/// disconnected) and when the request's deadline passes, ends a stream at its deadline, and
/// keeps its session busy (or its stream's place taken) until it is done.
struct GuardedBody {
    inner: Body,
    dropped: Option<DropGuard>,
    cancellation: CancellationToken,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    end_at_deadline: bool,
    expired: bool,
    _held: Held,
}

/// After the deadline cancels a call, how long its (cancelled) answer gets to arrive.
const EXPIRED_GRACE: Duration = Duration::from_secs(1);

impl http_body::Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Some(deadline) = &mut this.deadline
            && deadline.as_mut().poll(cx).is_ready()
        {
            if this.expired || this.end_at_deadline {
                this.finish();
                return Poll::Ready(None);
            }
            tracing::debug!("request deadline passed: cancelling its calls");
            this.expired = true;
            this.cancellation.cancel();
            deadline.as_mut().reset(Instant::now() + EXPIRED_GRACE);
            let _ = deadline.as_mut().poll(cx);
        }
        let frame = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(frame, Poll::Ready(None)) || this.inner.is_end_stream() {
            this.finish();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl GuardedBody {
    /// The answer is complete: nothing to cancel any more.
    fn finish(&mut self) {
        if let Some(dropped) = self.dropped.take() {
            dropped.disarm();
        }
        self.deadline = None;
    }
}
