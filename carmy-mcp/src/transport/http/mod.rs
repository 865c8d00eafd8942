//! Streamable HTTP: rmcp's service behind authentication, Host and Origin checks, a body limit,
//! a per-request deadline, disconnect cancellation, bounded sessions bound to their principals,
//! bounded connections with a deadline for each request head, a health endpoint and graceful
//! shutdown. Optionally, beside it, the legacy HTTP+SSE transport (`sse/`), behind the same
//! protections. Its authentication (`auth.rs`, bearer tokens and the `Authenticator` trait) and
//! OAuth resource-server support (`oauth/`, behind the `oauth` feature) live here too.
//!
//! `mod.rs` is the builder; `guard.rs` what each request goes through before rmcp, `body.rs`
//! the reading of its body, `sessions.rs` the sessions, `connections/` the accepting of
//! connections, `refusal.rs` the answers given before rmcp, `service.rs` rmcp's service as
//! every request shares it.

mod auth;
mod body;
mod checks;
mod connections;
mod cors;
mod guard;
#[cfg(feature = "oauth")]
mod oauth;
mod rate;
mod refusal;
mod service;
mod sessions;
mod sse;

use std::{
    future::Future,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    Router, middleware,
    response::{IntoResponse, Response},
    routing::get,
};
use carmy_core::RateLimit;
use http::{StatusCode, header};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use self::auth::DynAuthenticator;
use self::{
    connections::ConnectionLimits,
    sessions::{SessionLimits, Sessions},
};
use super::{
    defaults::{
        DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT, DEFAULT_MAX_BODY_BYTES,
        DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
        DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_STREAM_TIMEOUT,
        DEFAULT_WRITE_TIMEOUT,
    },
    shutdown::{self, DEFAULT_GRACE_PERIOD},
};
use crate::{server::McpServer, transport::line::DEFAULT_MAX_OUTBOX_BYTES};

pub use self::auth::{Authenticator, BearerTokens, MIN_TOKEN_LEN, TokenFileError, Unauthorized};
#[cfg(feature = "oauth")]
pub use self::oauth::{DEFAULT_KEYS_MAX_AGE, OAuth, OAuthError};
pub use self::sse::{MESSAGES_PATH, SSE_PATH};

/// The path MCP is served on.
pub const MCP_PATH: &str = "/mcp";
/// The health endpoint: `200 {"status":"ok"}`, or `503` once shutting down. No authentication.
pub const HEALTH_PATH: &str = "/health";

/// The browser origins [`HttpServer`] accepts by default: pages served from a loopback address,
/// on any port. A page there runs on the same machine as the server, as local browser-based
/// clients do; a page of any other origin (the DNS-rebinding and cross-site attacks) is refused.
pub const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// An [`McpServer`] served over MCP's streamable HTTP transport, with secure defaults:
/// loopback `Host` names only, browser `Origin`s only from loopback pages, 4 MiB bodies, a 120 s deadline per
/// request, stateful sessions (256 at most, 32 per principal, each usable by its principal
/// only, closed after 2 minutes idle), 512 connections at most with 10 s for each request head
/// and 30 s for each stalled write, and no authentication (so it refuses to serve on a
/// non-loopback address until given an [`authenticator`](HttpServer::authenticator)).
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
    sessions: SessionLimits,
    stream_timeout: Duration,
    connections: ConnectionLimits,
    legacy_sse: bool,
    max_outbox_bytes: usize,
    max_in_flight: usize,
    rate_limit: RateLimit,
    cors: Option<Cors>,
    #[cfg(feature = "oauth")]
    oauth: Option<crate::transport::http::oauth::OAuth>,
}

/// Whether browsers of the allowed origins are answered CORS, and with credentials.
#[derive(Clone, Copy, Debug)]
struct Cors {
    credentials: bool,
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
            .field("sessions", &self.sessions)
            .field("stream_timeout", &self.stream_timeout)
            .field("connections", &self.connections)
            .field("legacy_sse", &self.legacy_sse)
            .field("max_outbox_bytes", &self.max_outbox_bytes)
            .field("max_in_flight", &self.max_in_flight)
            .field("rate_limit", &self.rate_limit)
            .field("cors", &self.cors)
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
            allowed_origins: LOOPBACK_ORIGINS
                .iter()
                .map(|&origin| origin.into())
                .collect(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            grace_period: DEFAULT_GRACE_PERIOD,
            stateless: false,
            allow_unauthenticated: false,
            sessions: SessionLimits {
                max_sessions: DEFAULT_MAX_SESSIONS,
                max_per_principal: DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
                idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            },
            stream_timeout: DEFAULT_STREAM_TIMEOUT,
            connections: ConnectionLimits {
                max_connections: DEFAULT_MAX_CONNECTIONS,
                header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
                write_timeout: DEFAULT_WRITE_TIMEOUT,
            },
            legacy_sse: false,
            max_outbox_bytes: DEFAULT_MAX_OUTBOX_BYTES,
            max_in_flight: DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT,
            rate_limit: RateLimit::unlimited(),
            cors: Some(Cors { credentials: false }),
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }

    /// Authenticates every MCP request; see [`Authenticator`] for how its context relates to
    /// [`McpServer::context`].
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// Authenticates every MCP request with an OAuth access token ([`OAuth`](crate::OAuth)),
    /// and serves this resource's metadata (RFC 9728) where clients look for it: at
    /// [`OAuth::metadata_path`](crate::OAuth::metadata_path) and at the root well-known path,
    /// without authentication. Replaces any [`authenticator`](Self::authenticator).
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: crate::OAuth) -> Self {
        self.authenticator = Some(Arc::new(oauth.clone()));
        self.oauth = Some(oauth);
        self
    }

    /// The `Host` names (or `host:port`) accepted, replacing the loopback defaults: what clients
    /// put in the URL. Guards against DNS rebinding.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Browser origins allowed to call (`https://app.example.com`, `http://localhost:*`),
    /// replacing the default: pages served from a loopback address, on any port
    /// ([`LOOPBACK_ORIGINS`]), as local browser-based clients (the MCP Inspector) are. Requests
    /// from any other `Origin` are refused `403`, so a foreign page cannot drive a local
    /// server; clients outside a browser send no `Origin` at all. An empty list refuses every
    /// `Origin`.
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

    /// How many sessions may be open at once, all principals together. Past it, an `initialize`
    /// is answered `503` (with `Retry-After`) and a JSON-RPC error whose `data` is a `CAPACITY`
    /// error. An open `subscriptions/listen` stream (2026-07-28, where every request stands
    /// alone) counts as a session, and is refused alike.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.sessions.max_sessions = max;
        self
    }

    /// How many sessions one principal may have open at once, its open `subscriptions/listen`
    /// streams included. Past it, its `initialize` (or `subscriptions/listen`) is answered `429`
    /// (with `Retry-After`) and a JSON-RPC `CAPACITY` error; other principals are not affected.
    /// Callers without a principal count as one.
    pub fn max_sessions_per_principal(mut self, max: usize) -> Self {
        self.sessions.max_per_principal = max;
        self
    }

    /// How long a session stays open with nothing in progress on it: no request being answered
    /// and its stream (`GET`) not open. Then it is closed, and a request naming it gets `404`.
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.sessions.idle_timeout = timeout;
        self
    }

    /// How long a session's stream (`GET`), or a `subscriptions/listen` stream, stays open; then
    /// it ends and the client reconnects.
    pub fn stream_timeout(mut self, timeout: Duration) -> Self {
        self.stream_timeout = timeout;
        self
    }

    /// How many connections may be open at once (with [`serve`](Self::serve)). At the bound,
    /// the connection that has waited longest without a request in progress is closed to make
    /// room, or else the one whose client has taken no bytes of its answer for longest. If
    /// every connection is serving a request, a new one is answered at once and closed:
    /// [`HEALTH_PATH`] as usual, anything else `503` with `Retry-After` and a JSON-RPC
    /// `CAPACITY` error (up to an eighth as many as the bound at once, the oldest of them closed
    /// for a new one). Keep it under the process's open-files limit; reaching that limit also
    /// closes a waiting connection.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.connections.max_connections = max;
        self
    }

    /// How long a request's head may take to arrive, from its first byte, before the
    /// connection is closed (with [`serve`](Self::serve)). A connection quiet between requests
    /// is not timed out: it is the first closed when room is needed.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.connections.header_read_timeout = timeout;
        self
    }

    /// How long an answer being written may wait for its client to take bytes before the
    /// connection is closed (with [`serve`](Self::serve)), whatever it was writing: an answer,
    /// a session's stream, a legacy SSE stream (which closes its session). The clock restarts
    /// whenever the client takes some; a client that reads, however slowly, is not timed out.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.connections.write_timeout = timeout;
        self
    }

    /// How many bytes of messages may wait for a legacy SSE session's client to read them
    /// ([`DEFAULT_MAX_OUTBOX_BYTES`](crate::DEFAULT_MAX_OUTBOX_BYTES) by default, as on stdio).
    /// Once half of it waits, the client is behind: the session's new requests are refused
    /// `429` (with `Retry-After` and a JSON-RPC `CAPACITY` error) and its notifications
    /// dropped, until the client reads. An answer that would take it past the bound closes the
    /// session instead (its calls are cancelled, its stream ends), unless nothing else waits.
    /// A client that reads nothing at all loses its stream at the [write
    /// deadline](Self::write_timeout).
    pub fn max_outbox_bytes(mut self, bytes: usize) -> Self {
        self.max_outbox_bytes = bytes;
        self
    }

    /// How many requests a legacy SSE session may have in progress
    /// ([`DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT`] by default; at least 1). Past it, the session's new
    /// requests are refused `429` (with `Retry-After` and a JSON-RPC `CAPACITY` error); a
    /// request stops counting however it ends: answered, cancelled, past its deadline. Its
    /// `POST` is answered before it is, so this bounds the work one session has the server do
    /// at once. (Streamable HTTP needs no such bound: each request there holds a connection
    /// until it is answered.)
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }

    /// Also serves the legacy HTTP+SSE transport of MCP 2024-11-05, for clients that speak only
    /// that: `GET` [`SSE_PATH`] opens a session's event stream, whose first event names where
    /// to `POST` its messages ([`MESSAGES_PATH`]`?sessionId=…`). Off by default.
    ///
    /// Its sessions are served by the same handler, behind the same `Host` and `Origin` checks,
    /// authenticator, body limit and request deadline, and count within the same bounds on
    /// sessions; each belongs to the principal that opened it. A session lasts as long as its
    /// stream: the [stream timeout](Self::stream_timeout) and idle timeout do not apply (the
    /// transport cannot resume a stream), and closing the stream closes the session and
    /// cancels its calls, as does a client taking no bytes of it within the [write
    /// timeout](Self::write_timeout). As a `POST` is answered before its request, a session
    /// takes no new request while [`max_in_flight`](Self::max_in_flight) are in progress or
    /// [`max_outbox_bytes`](Self::max_outbox_bytes) wait for its client.
    pub fn legacy_sse(mut self, enabled: bool) -> Self {
        self.legacy_sse = enabled;
        self
    }

    /// How many HTTP requests one client address may send (default: unlimited): past it, a
    /// request is answered `429 Too Many Requests` with `Retry-After`, before authentication
    /// and any JSON-RPC work. The health endpoint is exempt. The address is the TCP peer's, so
    /// behind a reverse proxy limit there instead. Calls are limited per principal and tool by
    /// the runtime ([`Carmy::rate_limit`](carmy_core::Carmy::rate_limit)).
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = limit;
        self
    }

    /// Whether pages of the [allowed origins](Self::allowed_origins) get CORS answers (on by
    /// default): their preflights are answered, and they may send the MCP headers (sessions,
    /// revision, `Mcp-Method`, `Mcp-Name`, the tools' `Mcp-Param-*`) and read `Mcp-Session-Id`,
    /// `Mcp-Protocol-Version`, `WWW-Authenticate` and `Retry-After`. Other origins get no CORS
    /// headers, and their requests are refused `403` as before. Off: no CORS headers at all.
    pub fn cors(mut self, enabled: bool) -> Self {
        self.cors = enabled.then_some(Cors {
            credentials: self.cors.is_some_and(|cors| cors.credentials),
        });
        self
    }

    /// Whether CORS answers allow credentials (cookies, TLS client certificates:
    /// `Access-Control-Allow-Credentials: true`); off by default, as bearer tokens need none.
    /// Turns CORS on.
    pub fn cors_credentials(mut self, allowed: bool) -> Self {
        self.cors = Some(Cors {
            credentials: allowed,
        });
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
    /// disconnects or their deadline passes, and sessions are bounded as configured; accepting
    /// connections (their number, the deadlines of a request head and of writes, answering
    /// those past the bound) and shutting down are up to the application.
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
        let limits = self.connections;
        let (router, control) = self.build(Control::new());
        let overflow = overflow_router(limits.max_connections, control.draining.clone());
        let stop_accepting = CancellationToken::new();
        let serving =
            connections::serve(listener, router, overflow, limits, stop_accepting.clone());
        let mut serving = tokio::spawn(serving);
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
            .with_allowed_hosts(self.allowed_hosts.clone())
            .with_allowed_origins(self.allowed_origins.clone())
            .enforce_origin_validation()
            .with_max_request_body_bytes(self.max_body_bytes)
            .with_legacy_session_mode(!self.stateless)
            .with_json_response(self.stateless)
            .with_cancellation_token(control.sessions.clone());
        let sessions = Arc::new(Sessions::new(self.sessions, control.sessions.clone()));
        let server = self.server.clone();
        let mcp = service::SharedService::new(StreamableHttpService::new(
            move || Ok(server.for_session()),
            sessions.clone(),
            config,
        ));
        let legacy = self.legacy_sse.then(|| sse::Legacy {
            server: self.server.clone(),
            authenticator: self.authenticator.clone(),
            base: self.server.context.clone(),
            allowed: sse::Allowed {
                hosts: self.allowed_hosts.clone(),
                origins: self.allowed_origins.clone(),
            },
            max_body_bytes: self.max_body_bytes,
            request_timeout: self.request_timeout,
            max_outbox_bytes: self.max_outbox_bytes,
            max_in_flight: self.max_in_flight,
            idle_timeout: self.sessions.idle_timeout,
            sessions: sessions.clone(),
            table: Arc::default(),
            calls: control.calls.clone(),
            close: control.sessions.clone(),
        });
        let cors = self.cors.map(|cors| {
            let allowed = checks::Allowed {
                hosts: Vec::new(),
                origins: self.allowed_origins.clone(),
            };
            cors::layer(allowed, self.server.runtime.catalog(), cors.credentials)
        });
        let draining = control.draining.clone();
        // The checks before rmcp, innermost first: each `route_layer` wraps those above it, so a
        // request meets them bottom up (see `guard.rs` for why this order).
        let mut router =
            Router::new()
                .route_service(MCP_PATH, mcp)
                .route_layer(middleware::from_fn_with_state(
                    guard::Places {
                        sessions: sessions.clone(),
                        stateful: !self.stateless,
                        idle_timeout: self.sessions.idle_timeout,
                    },
                    guard::reserve_session_place,
                ));
        #[cfg(feature = "oauth")]
        {
            router = router.route_layer(middleware::from_fn_with_state(
                self.server.runtime.clone(),
                guard::require_scope,
            ));
        }
        router = router
            .route_layer(middleware::from_fn_with_state(
                self.max_body_bytes,
                guard::read_body,
            ))
            .route_layer(middleware::from_fn(guard::answer_within_deadline))
            .route_layer(middleware::from_fn_with_state(
                guard::SessionOwners {
                    sessions,
                    stateful: !self.stateless,
                },
                guard::enter_session,
            ))
            .route_layer(middleware::from_fn_with_state(
                guard::Ties {
                    calls: control.calls.clone(),
                    request_timeout: self.request_timeout,
                    stream_timeout: self.stream_timeout,
                },
                guard::tie_to_connection,
            ))
            .route_layer(middleware::from_fn_with_state(
                Arc::new(guard::Authentication {
                    authenticator: self.authenticator,
                    base: self.server.context.clone(),
                }),
                guard::authenticate,
            ))
            .route(HEALTH_PATH, get(move || health(draining.clone())));
        if let Some(legacy) = legacy {
            router = router.merge(sse::router(legacy));
        }
        #[cfg(feature = "oauth")]
        if let Some(oauth) = self.oauth {
            router = router.merge(oauth_metadata(&oauth));
        }
        // An address over its limit costs nothing more than this.
        if let Some(limiter) = rate::AddressLimiter::new(self.rate_limit) {
            router = router.layer(middleware::from_fn_with_state(limiter, rate::limit_request));
        }
        // Outermost, so a page reads every answer, a `429` or a `401` included.
        if let Some(cors) = cors {
            router = router.layer(cors);
        }
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

/// The protected resource metadata, at the resource's well-known path and (for clients that
/// look only there) the root one.
#[cfg(feature = "oauth")]
fn oauth_metadata(oauth: &crate::OAuth) -> Router {
    let document = Arc::new(oauth.metadata().to_string());
    let answer = move || {
        let document = document.clone();
        async move {
            (
                [
                    (header::CONTENT_TYPE, "application/json"),
                    (header::CACHE_CONTROL, "max-age=300"),
                ],
                document.as_str().to_owned(),
            )
                .into_response()
        }
    };
    let mut router = Router::new().route(
        crate::transport::http::oauth::METADATA_PATH,
        get(answer.clone()),
    );
    if oauth.metadata_path() != crate::transport::http::oauth::METADATA_PATH {
        router = router.route(oauth.metadata_path(), get(answer));
    }
    router
}

/// What a connection past the bound is answered: its health, or that there is no room.
fn overflow_router(max_connections: usize, draining: Arc<AtomicBool>) -> Router {
    Router::new()
        .route(HEALTH_PATH, get(move || health(draining.clone())))
        .fallback(move || async move { refusal::no_room(max_connections) })
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
