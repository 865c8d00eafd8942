//! The router an [`HttpServer`] becomes: rmcp's streamable HTTP service on [`MCP_PATH`] behind
//! the checks of `guard.rs`, the health endpoint, the legacy SSE transport and the OAuth
//! metadata when configured, then the per-address rate limit and CORS around everything; and
//! the switches ([`Control`]) that serving flips to shut it down.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use axum::{
    Router, middleware,
    response::{IntoResponse, Response},
    routing::get,
};
use http::{StatusCode, header};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

#[cfg(feature = "oauth")]
use super::oauth::{METADATA_PATH, OAuth};
use super::{
    HEALTH_PATH, HttpServer, MCP_PATH, checks, cors, guard, rate, refusal, service,
    sessions::Sessions, sse,
};

impl HttpServer {
    /// The MCP endpoint ([`MCP_PATH`]) and the health endpoint ([`HEALTH_PATH`]) as an axum
    /// router, to merge into an existing application. Calls are cancelled when their client
    /// disconnects or their deadline passes, and sessions are bounded as configured; accepting
    /// connections (their number, the deadlines of a request head and of writes, answering
    /// those past the bound) and shutting down are up to the application.
    pub fn into_router(self) -> Router {
        self.build(Control::new()).0
    }

    pub(super) fn build(self, control: Control) -> (Router, Control) {
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
        // The checks before rmcp, in one middleware (see `guard.rs` for their order).
        let guard = Arc::new(guard::Guard {
            authentication: guard::Authentication {
                authenticator: self.authenticator,
                base: self.server.context.clone(),
            },
            ties: guard::Ties {
                calls: control.calls.clone(),
                request_timeout: self.request_timeout,
                stream_timeout: self.stream_timeout,
            },
            owners: guard::SessionOwners {
                sessions: sessions.clone(),
                stateful: !self.stateless,
            },
            max_body_bytes: self.max_body_bytes,
            #[cfg(feature = "oauth")]
            runtime: self.server.runtime.clone(),
            places: guard::Places {
                sessions,
                stateful: !self.stateless,
                idle_timeout: self.sessions.idle_timeout,
            },
        });
        let mut router = Router::new()
            .route_service(MCP_PATH, mcp)
            .route_layer(middleware::from_fn_with_state(guard, guard::guard))
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

/// The switches of a running server.
pub(super) struct Control {
    /// Cancels every call in flight (the grace period is over).
    pub(super) calls: CancellationToken,
    /// Ends rmcp's sessions and streams.
    pub(super) sessions: CancellationToken,
    /// Set once shutting down; the health endpoint answers 503.
    pub(super) draining: Arc<AtomicBool>,
}

impl Control {
    pub(super) fn new() -> Self {
        Self {
            calls: CancellationToken::new(),
            sessions: CancellationToken::new(),
            draining: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// The protected resource metadata, at the resource's well-known path and (for clients that
/// look only there) the root one.
#[cfg(feature = "oauth")]
fn oauth_metadata(oauth: &OAuth) -> Router {
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
    let mut router = Router::new().route(METADATA_PATH, get(answer.clone()));
    if oauth.metadata_path() != METADATA_PATH {
        router = router.route(oauth.metadata_path(), get(answer));
    }
    router
}

/// What a connection past the bound is answered: its health, or that there is no room.
pub(super) fn overflow_router(max_connections: usize, draining: Arc<AtomicBool>) -> Router {
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
