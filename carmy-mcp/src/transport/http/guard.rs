//! What every MCP request goes through before rmcp: steps with one job each, in this order
//! ([`guard`] chains them):
//!
//! 1. [`authenticate`]: the authenticator decides who calls (a refused request never reaches
//!    MCP); the [`Caller`] travels on in the request's extensions.
//! 2. [`tie_to_connection`]: the request's calls run as the caller ([`RequestScope`]) and are
//!    cancelled when the client disconnects or the deadline passes; a stream ends at its own
//!    deadline. What the layers below hold until the answer is done ([`Busy`],
//!    [`StreamPlace`]) comes back to it in the answer's extensions, and its body holds it.
//! 3. [`enter_session`]: only the principal that opened a session may use it.
//! 4. [`answer_within_deadline`]: what follows, reading the body included, gets `504` past the
//!    request's deadline.
//! 5. [`read_body`]: a JSON body read (bounded) and classified once; the [`Message`] travels on.
//! 6. [`require_scope`] (OAuth): a call its token's scopes do not allow is challenged.
//! 7. [`reserve_session_place`]: opening a session takes a place within the bounds on sessions.
//!
//! The order is the order of the checks, which decides which refusal a request gets when
//! several apply. Each step is an async function handed the steps after it (`next`): it returns
//! its refusal early, or awaits `next` and may look at the answer, with no `Service` or future
//! type written out per job. The chain is one axum middleware, not a layer per step: axum clones
//! and boxes what follows a layer for every request, and seven layers cost about 15% more CPU per
//! call than the whole chain in one (`search_products` over stateless HTTP, 64 clients).
//!
//! A `subscriptions/listen` request (2026-07-28) opens a stream as a session's `GET` does, but
//! stands alone: every request on that revision is its own session, so a session's bounds never
//! see it. It takes a place within the bounds on sessions instead, for as long as its stream is
//! open, and its stream ends at the stream deadline as a `GET` stream does.
//!
//! The SEP-2243 headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) are not checked here: rmcp
//! checks them against every `POST` body itself, with the tools' input schemas from the
//! handler's `get_tool`, and answers a mismatch `400` with `-32020`.

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
    auth::DynAuthenticator,
    body::{self, Message},
    refusal,
    sessions::{Activity, Entered, Sessions, Ticket, Visit},
};
use crate::scope::RequestScope;

/// What the steps need, shared by every request.
pub(super) struct Guard {
    pub(super) authentication: Authentication,
    pub(super) ties: Ties,
    pub(super) owners: SessionOwners,
    pub(super) max_body_bytes: usize,
    /// The catalog [`require_scope`] looks the called tool up in.
    #[cfg(feature = "oauth")]
    pub(super) runtime: carmy_core::Runtime,
    pub(super) places: Places,
}

/// Every step, in the order above, then rmcp: the one middleware in front of the MCP endpoint.
pub(super) async fn guard(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let guard = &*guard;
    // Built from rmcp outwards: each step is handed the steps after it.
    let chain = move |request: Request| next.run(request);
    let chain = move |request: Request| reserve_session_place(&guard.places, request, chain);
    #[cfg(feature = "oauth")]
    let chain = move |request: Request| require_scope(&guard.runtime, request, chain);
    let chain = move |request: Request| read_body(guard.max_body_bytes, request, chain);
    let chain = move |request: Request| answer_within_deadline(request, chain);
    let chain = move |request: Request| enter_session(&guard.owners, request, chain);
    let chain = move |request: Request| tie_to_connection(&guard.ties, request, chain);
    authenticate(&guard.authentication, request, chain).await
}

/// Who calls: what [`authenticate`] decided, for the steps after it.
#[derive(Clone)]
pub(super) struct Caller(pub(super) Context);

/// What [`authenticate`] needs: the authenticator, if any, and the host's context it starts from.
pub(super) struct Authentication {
    pub(super) authenticator: Option<Arc<dyn DynAuthenticator>>,
    pub(super) base: Context,
}

/// Decides who calls, or refuses the request (`401`, `403`, `503`).
async fn authenticate<F: Future<Output = Response>>(
    authentication: &Authentication,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let context = match &authentication.authenticator {
        Some(authenticator) => match authenticator
            .authenticate_boxed(&parts, authentication.base.clone())
            .await
        {
            Ok(context) => context,
            Err(refused) => return refusal::unauthorized(&refused),
        },
        None => authentication.base.clone(),
    };
    parts.extensions.insert(Caller(context));
    next(Request::from_parts(parts, body)).await
}

/// What [`tie_to_connection`] needs.
pub(super) struct Ties {
    /// Cancels every call (the end of shutdown's grace period).
    pub(super) calls: CancellationToken,
    pub(super) request_timeout: Duration,
    pub(super) stream_timeout: Duration,
}

/// When a request's answer must have started ([`answer_within_deadline`]) and its calls are
/// cancelled; set by [`tie_to_connection`] on every request but a stream's `GET`.
#[derive(Clone, Copy)]
pub(super) struct Deadline(Instant);

/// The request's calls run as its caller and stop when its client disconnects, its deadline
/// passes or the server's grace period ends; a stream (`GET`, or a `subscriptions/listen` that
/// took a place) ends at the stream deadline instead. The answer's body holds what the layers
/// below left in its extensions until it is done.
async fn tie_to_connection<F: Future<Output = Response>>(
    ties: &Ties,
    mut request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let context = caller(&request).clone();
    let cancellation = ties.calls.child_token();
    // What the handler runs the request's calls as, and what stops them.
    request.extensions_mut().insert(RequestScope {
        context,
        cancellation: cancellation.clone(),
    });
    // Until the answer is complete, dropping this request (the client went away) cancels it.
    let dropped = cancellation.clone().drop_guard();
    let deadline =
        (request.method() != Method::GET).then(|| Deadline(Instant::now() + ties.request_timeout));
    if let Some(deadline) = deadline {
        request.extensions_mut().insert(deadline);
    }
    let mut response = next(request).await;
    let place = response.extensions_mut().remove::<StreamPlace>();
    // A stream answers at once and stays open: its deadline ends it (clients reconnect).
    let expiry = match deadline {
        Some(Deadline(at)) if place.is_none() => Expiry::Cancel(at),
        _ => Expiry::End(Instant::now() + ties.stream_timeout),
    };
    let held = Held {
        _activity: response.extensions_mut().remove::<Busy>(),
        _place: place,
    };
    guarded(response, dropped, cancellation, expiry, held)
}

/// What [`enter_session`] needs: the sessions, unless serving statelessly.
pub(super) struct SessionOwners {
    pub(super) sessions: Arc<Sessions>,
    pub(super) stateful: bool,
}

/// A session kept busy until the answer is done: handed back in the answer's extensions.
#[derive(Clone)]
pub(super) struct Busy(#[allow(dead_code, reason = "held, never read")] Arc<Activity>);

/// On a session, only its owner's requests go on (another's get `404`, as for an unknown
/// session; a second standalone stream `409`); they keep it from being idle.
async fn enter_session<F: Future<Output = Response>>(
    owners: &SessionOwners,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let session = request
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|_| owners.stateful);
    let activity = match session {
        Some(id) => {
            let principal = caller(&request).principal();
            match owners.sessions.enter(
                id,
                principal,
                visit_of(request.method(), request.headers()),
            ) {
                Entered::Active(activity) => Some(activity),
                Entered::Unknown => None,
                Entered::NotYours => return refusal::unknown_session(),
                Entered::StreamOpen => return refusal::stream_open(),
            }
        }
        None => None,
    };
    let mut response = next(request).await;
    if let Some(activity) = activity {
        response.extensions_mut().insert(Busy(Arc::new(activity)));
    }
    response
}

/// `504` if the answer has not started by the request's [`Deadline`].
async fn answer_within_deadline<F: Future<Output = Response>>(
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let Some(&Deadline(at)) = request.extensions().get::<Deadline>() else {
        return next(request).await;
    };
    tokio::time::timeout_at(at, next(request))
        .await
        .unwrap_or_else(|_| refusal::deadline_exceeded())
}

/// A JSON `POST` body, read (at most `max_body_bytes`) and classified once ([`body::read`]):
/// refused `413` or `400` if it is too long or no JSON-RPC message, else handed on as bytes,
/// with the [`Message`] it carries in the request's extensions.
async fn read_body<F: Future<Output = Response>>(
    max_body_bytes: usize,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    if request.method() != Method::POST || !body::is_json(request.headers()) {
        return next(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let (bytes, message) = match body::read(&parts.headers, body, max_body_bytes).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    parts.extensions.insert(message);
    next(Request::from_parts(parts, Body::from(bytes))).await
}

/// A call of a tool the caller's token may not make but another scope would allow is refused
/// `403` with the challenge asking for that scope: the client gets a token with it and retries.
#[cfg(feature = "oauth")]
async fn require_scope<F: Future<Output = Response>>(
    runtime: &carmy_core::Runtime,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let challenge = request
        .extensions()
        .get::<Message>()
        .and_then(|message| message.tool.as_deref())
        .and_then(|tool| {
            let step_up = caller(&request).extension::<super::oauth::StepUp>()?;
            step_up.challenge(runtime.catalog().get(tool)?)
        });
    match challenge {
        Some((challenge, reason)) => refusal::insufficient_scope(&challenge, &reason),
        None => next(request).await,
    }
}

/// What [`reserve_session_place`] needs.
pub(super) struct Places {
    /// The bounds on sessions.
    pub(super) sessions: Arc<Sessions>,
    pub(super) stateful: bool,
    /// How long an idle session lasts: when to retry once refused.
    pub(super) idle_timeout: Duration,
}

/// A `subscriptions/listen` stream's place within the bounds on sessions: handed back in the
/// answer's extensions, held by the stream.
#[derive(Clone)]
pub(super) struct StreamPlace(#[allow(dead_code, reason = "held, never read")] Ticket);

/// An `initialize` opening a session, or a `subscriptions/listen`, takes a place within the
/// bounds on sessions, or is refused (`503` for the server's bound, `429` for the principal's).
/// The place of an `initialize` travels with the request, and the session it opens keeps it;
/// a stream's is held by its answer.
async fn reserve_session_place<F: Future<Output = Response>>(
    places: &Places,
    mut request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let Some(message) = request.extensions().get::<Message>() else {
        return next(request).await;
    };
    let names_session = request
        .headers()
        .get(HEADER_SESSION_ID)
        .is_some_and(|value| value.to_str().is_ok());
    let opens_session = places.stateful && !names_session;
    let takes_place = message.listen || (opens_session && message.initialize);
    if !takes_place {
        return next(request).await;
    }
    let listen = message.listen;
    let ticket = match places.sessions.reserve(caller(&request).principal()) {
        Ok(ticket) => ticket,
        Err(full) => return refusal::sessions_full(full, message.id.as_ref(), places.idle_timeout),
    };
    if !listen {
        request.extensions_mut().insert(ticket);
        return next(request).await;
    }
    let mut response = next(request).await;
    response.extensions_mut().insert(StreamPlace(ticket));
    response
}

/// The caller [`authenticate`] put in `request`'s extensions.
fn caller(request: &Request) -> &Context {
    &request
        .extensions()
        .get::<Caller>()
        .expect("authenticate runs first")
        .0
}

/// What an answer holds until it is done.
struct Held {
    /// Its session is busy.
    _activity: Option<Busy>,
    /// A stream's place within the bounds on sessions.
    _place: Option<StreamPlace>,
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
