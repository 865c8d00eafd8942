//! Streamable HTTP: rmcp's service behind authentication, Host and Origin checks, a body limit,
//! a per-request deadline, disconnect cancellation, a health endpoint and graceful shutdown.

use std::{
    future::Future,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context as TaskContext, Poll},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};
use carmy_core::Context;
use http::{HeaderValue, Method, StatusCode, header};
use http_body::{Frame, SizeHint};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::{net::TcpListener, time::Instant};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{
    auth::{Authenticator, DynAuthenticator, Unauthorized},
    shutdown::{self, DEFAULT_GRACE_PERIOD},
};
use crate::{scope::RequestScope, server::McpServer};

/// The path MCP is served on.
pub const MCP_PATH: &str = "/mcp";
/// The health endpoint: `200 {"status":"ok"}`, or `503` once shutting down. No authentication.
pub const HEALTH_PATH: &str = "/health";
/// Default for [`HttpServer::max_body_bytes`]: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default for [`HttpServer::request_timeout`]: 120 s, past the runtime's 60 s default tool
/// deadline so that a slow tool reports its own `TIMEOUT` first.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// An [`McpServer`] served over MCP's streamable HTTP transport, with secure defaults:
/// loopback `Host` names only, any `Origin` header refused, 4 MiB bodies, a 120 s deadline per
/// request, stateful sessions, and no authentication (so it refuses to serve on a non-loopback
/// address until given an [`authenticator`](HttpServer::authenticator)).
///
/// ```no_run
/// # async fn demo(server: carmy_mcp::McpServer) -> Result<(), Box<dyn std::error::Error>> {
/// use carmy_mcp::{BearerTokens, HttpServer};
///
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// HttpServer::new(server)
///     .authenticator(BearerTokens::parse(&std::fs::read_to_string("tokens")?)?)
///     .serve(listener) // MCP on /mcp, health on /health, until SIGINT or SIGTERM
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
#[must_use]
pub struct HttpServer {
    server: McpServer,
    authenticator: Option<Arc<dyn DynAuthenticator>>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    max_body_bytes: usize,
    request_timeout: Duration,
    grace_period: Duration,
    stateless: bool,
    allow_unauthenticated: bool,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("server", &self.server)
            .field("authenticated", &self.authenticator.is_some())
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("request_timeout", &self.request_timeout)
            .field("grace_period", &self.grace_period)
            .field("stateless", &self.stateless)
            .finish()
    }
}

impl HttpServer {
    /// `server` over streamable HTTP, with the defaults above.
    pub fn new(server: McpServer) -> Self {
        Self {
            server,
            authenticator: None,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            grace_period: DEFAULT_GRACE_PERIOD,
            stateless: false,
            allow_unauthenticated: false,
        }
    }

    /// Authenticates every MCP request; see [`Authenticator`] for how its context relates to
    /// [`McpServer::context`].
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// The `Host` names (or `host:port`) accepted, replacing the loopback defaults: what clients
    /// put in the URL. Guards against DNS rebinding.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Browser origins allowed to call (`https://app.example.com`, `http://localhost:*`). None by
    /// default: requests carrying any `Origin` header are refused `403`; clients outside a
    /// browser send none.
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// The largest request body accepted; larger ones are answered `413`.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long one HTTP request may take, body and answer included. Past it the call is
    /// cancelled; a request still waiting for its answer gets `504`.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// On shutdown, how long running calls get to finish before they are cancelled.
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace_period = grace;
        self
    }

    /// Serves without sessions: every request stands alone and simple answers are plain JSON.
    /// Clients on protocol 2026-07-28 are served statelessly either way.
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// Lets [`serve`](Self::serve) run without an authenticator on a non-loopback address, where
    /// anyone who can reach it gets the host context. Off by default.
    pub fn allow_unauthenticated(mut self, allow: bool) -> Self {
        self.allow_unauthenticated = allow;
        self
    }

    /// The MCP endpoint ([`MCP_PATH`]) and the health endpoint ([`HEALTH_PATH`]) as an axum
    /// router, to merge into an existing application. Calls are cancelled when their client
    /// disconnects or their deadline passes; shutting the application down is up to it.
    pub fn into_router(self) -> Router {
        self.build(Control::new()).0
    }

    /// Serves on `listener` until SIGINT or SIGTERM, then shuts down gracefully.
    pub async fn serve(self, listener: TcpListener) -> Result<(), HttpError> {
        self.serve_with_shutdown(listener, shutdown::signal()).await
    }

    /// Serves on `listener` until `signal` completes, then shuts down gracefully: new
    /// connections are refused at once, running calls get the [grace
    /// period](Self::grace_period) to finish and are cancelled past it, then open sessions and
    /// streams are closed.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), HttpError> {
        let addr = listener.local_addr().map_err(HttpError::Io)?;
        if self.authenticator.is_none() && !addr.ip().is_loopback() && !self.allow_unauthenticated {
            return Err(HttpError::Unauthenticated { addr });
        }
        let runtime = self.server.runtime().clone();
        let grace = self.grace_period;
        let (router, control) = self.build(Control::new());
        let stop_accepting = CancellationToken::new();
        let serving = axum::serve(listener, router)
            .with_graceful_shutdown(stop_accepting.clone().cancelled_owned());
        let mut serving = tokio::spawn(async move { serving.await });
        tokio::select! {
            stopped = &mut serving => return finished(stopped),
            () = signal => {}
        }
        tracing::info!("shutting down: refusing new connections, letting running calls finish");
        control.draining.store(true, Ordering::Relaxed);
        stop_accepting.cancel();
        shutdown::drain(&runtime, grace, || control.calls.cancel()).await;
        // Answers of the calls that just ended are on their way; then close what is still open
        // (sessions, their standalone streams).
        if let Ok(stopped) = tokio::time::timeout(FLUSH, &mut serving).await {
            return finished(stopped);
        }
        control.sessions.cancel();
        match tokio::time::timeout(CLOSE, &mut serving).await {
            Ok(stopped) => finished(stopped),
            Err(_) => {
                tracing::warn!("connections still open after shutdown; dropping them");
                serving.abort();
                Ok(())
            }
        }
    }

    fn build(self, control: Control) -> (Router, Control) {
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(self.allowed_hosts)
            .with_allowed_origins(self.allowed_origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(self.max_body_bytes)
            .with_legacy_session_mode(!self.stateless)
            .with_json_response(self.stateless)
            .with_cancellation_token(control.sessions.clone());
        let server = self.server.clone();
        let mcp = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let guard = Arc::new(Guard {
            authenticator: self.authenticator,
            base: self.server.context.clone(),
            request_timeout: self.request_timeout,
            calls: control.calls.clone(),
        });
        let draining = control.draining.clone();
        let router = Router::new()
            .route_service(MCP_PATH, mcp)
            .route_layer(middleware::from_fn_with_state(guard, guard_request))
            .route(HEALTH_PATH, get(move || health(draining.clone())));
        (router, control)
    }
}

/// How long answers get to reach their clients once the calls behind them have ended.
const FLUSH: Duration = Duration::from_millis(500);
/// How long closed sessions get to wind down before their connections are dropped.
const CLOSE: Duration = Duration::from_secs(5);

fn finished(stopped: Result<std::io::Result<()>, tokio::task::JoinError>) -> Result<(), HttpError> {
    match stopped {
        Ok(result) => result.map_err(HttpError::Io),
        Err(error) => Err(HttpError::Task(error)),
    }
}

/// The switches of a running server.
struct Control {
    /// Cancels every call in flight (the grace period is over).
    calls: CancellationToken,
    /// Ends rmcp's sessions and streams.
    sessions: CancellationToken,
    /// Set once shutting down; the health endpoint answers 503.
    draining: Arc<AtomicBool>,
}

impl Control {
    fn new() -> Self {
        Self {
            calls: CancellationToken::new(),
            sessions: CancellationToken::new(),
            draining: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Why HTTP serving stopped or never started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// Binding or accepting failed.
    #[error("HTTP server I/O: {0}")]
    Io(#[source] std::io::Error),
    /// A non-loopback address without an authenticator, and unauthenticated serving not allowed.
    #[error(
        "refusing to serve {addr} without authentication: anyone who can reach it could call the tools; configure bearer tokens, or allow unauthenticated access explicitly"
    )]
    Unauthenticated {
        /// The address bound.
        addr: SocketAddr,
    },
    /// The server's task failed.
    #[error("the HTTP server failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}

struct Guard {
    authenticator: Option<Arc<dyn DynAuthenticator>>,
    base: Context,
    request_timeout: Duration,
    calls: CancellationToken,
}

/// Runs before rmcp: authenticates (a refused request never reaches MCP), then ties the
/// request's calls to its connection and deadline.
async fn guard_request(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let context = match &guard.authenticator {
        Some(authenticator) => match authenticator
            .authenticate_boxed(&parts, guard.base.clone())
            .await
        {
            Ok(context) => context,
            Err(refused) => return unauthorized(&refused),
        },
        None => guard.base.clone(),
    };
    let cancellation = guard.calls.child_token();
    // What the handler runs the request's calls as, and what stops them.
    parts.extensions.insert(RequestScope {
        context,
        cancellation: cancellation.clone(),
    });
    // A GET is the standalone stream of a session, open as long as the session: no deadline.
    let deadline = (parts.method != Method::GET).then(|| Instant::now() + guard.request_timeout);
    // Until the answer is complete, dropping this request (the client went away) cancels it.
    let dropped = cancellation.clone().drop_guard();
    let request = Request::from_parts(parts, body);
    let response = match deadline {
        Some(deadline) => match tokio::time::timeout_at(deadline, next.run(request)).await {
            Ok(response) => response,
            Err(_) => return deadline_exceeded(),
        },
        None => next.run(request).await,
    };
    let (parts, body) = response.into_parts();
    let body = GuardedBody {
        inner: body,
        dropped: Some(dropped),
        cancellation,
        deadline: deadline.map(|deadline| Box::pin(tokio::time::sleep_until(deadline))),
        expired: false,
    };
    Response::from_parts(parts, Body::new(body))
}

/// A response body that cancels its request's calls when dropped before its end (the client
/// disconnected) and when the request's deadline passes.
struct GuardedBody {
    inner: Body,
    dropped: Option<DropGuard>,
    cancellation: CancellationToken,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    expired: bool,
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
            if this.expired {
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

async fn health(draining: Arc<AtomicBool>) -> Response {
    let (status, body) = if draining.load(Ordering::Relaxed) {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"status":"shutting_down"}"#,
        )
    } else {
        (StatusCode::OK, r#"{"status":"ok"}"#)
    };
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn unauthorized(refused: &Unauthorized) -> Response {
    let body = serde_json::json!({ "error": "unauthorized", "reason": refused.reason() });
    let mut response = (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Ok(challenge) = HeaderValue::from_str(&refused.challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

fn deadline_exceeded() -> Response {
    (
        StatusCode::GATEWAY_TIMEOUT,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"error":"request deadline exceeded"}"#,
    )
        .into_response()
}
