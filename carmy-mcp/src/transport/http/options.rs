//! [`HttpServer`]: what is served over streamable HTTP, and every option with its secure
//! default. Serving it is `serving.rs`'s; the router it becomes, `router.rs`'s.

use std::{sync::Arc, time::Duration};

use carmy_core::RateLimit;

#[cfg(feature = "oauth")]
use super::oauth::OAuth;
use super::{
    LOOPBACK_ORIGINS,
    auth::{Authenticator, DynAuthenticator},
    connections::ConnectionLimits,
    sessions::SessionLimits,
};
use crate::{
    server::McpServer,
    transport::{
        defaults::{
            DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT, DEFAULT_MAX_BODY_BYTES,
            DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
            DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_STREAM_TIMEOUT,
            DEFAULT_WRITE_TIMEOUT,
        },
        line::DEFAULT_MAX_OUTBOX_BYTES,
        shutdown::DEFAULT_GRACE_PERIOD,
    },
};

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
    pub(super) server: McpServer,
    pub(super) authenticator: Option<Arc<dyn DynAuthenticator>>,
    pub(super) allowed_hosts: Vec<String>,
    pub(super) allowed_origins: Vec<String>,
    pub(super) max_body_bytes: usize,
    pub(super) request_timeout: Duration,
    pub(super) grace_period: Duration,
    pub(super) stateless: bool,
    pub(super) allow_unauthenticated: bool,
    pub(super) sessions: SessionLimits,
    pub(super) stream_timeout: Duration,
    pub(super) connections: ConnectionLimits,
    pub(super) legacy_sse: bool,
    pub(super) max_outbox_bytes: usize,
    pub(super) max_in_flight: usize,
    pub(super) rate_limit: RateLimit,
    pub(super) cors: Option<Cors>,
    #[cfg(feature = "oauth")]
    pub(super) oauth: Option<OAuth>,
}

/// Whether browsers of the allowed origins are answered CORS, and with credentials.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cors {
    pub(super) credentials: bool,
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

    /// Authenticates every MCP request with an OAuth access token ([`OAuth`]),
    /// and serves this resource's metadata (RFC 9728) where clients look for it: at
    /// [`OAuth::metadata_path`] and at the root well-known path,
    /// without authentication. Replaces any [`authenticator`](Self::authenticator).
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: OAuth) -> Self {
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
}
