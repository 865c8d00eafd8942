//! The legacy HTTP+SSE transport of MCP 2024-11-05, which rmcp does not serve: `GET /sse`
//! opens an event stream whose first event (`endpoint`) names where to `POST` messages
//! (`/messages?sessionId=…`); each `POST` is answered `202 Accepted` and the server's messages
//! arrive on the stream as `message` events.
//!
//! Each stream is one rmcp session, bridged with channels to rmcp's sink-and-stream transport,
//! so it gets the very handler (lifecycles, confirmation, logging, progress, cancellation) the
//! other transports get. It sits behind the same protections as streamable HTTP: the `Host`
//! and `Origin` allow-lists (`../checks.rs`, as rmcp has them private), the authenticator, the
//! body limit and request deadline, and the bounds on sessions, shared with streamable HTTP's
//! (`../sessions.rs`). A session belongs to the principal that opened it: another's `POST` to
//! it is answered `404`, as an unknown one is. It lives exactly as long as its stream: there
//! is no resuming in this transport, so the stream has no deadline but the one of each write
//! (a client that takes no bytes of it loses it), and closing it closes the session and
//! cancels its calls.
//!
//! A `POST` is answered before its request is, so nothing else bounds what a session has in
//! progress or what waits for its client: its requests in progress are counted (`calls.rs`)
//! and its stream's events counted in bytes (`outbox.rs`), and past either bound the session
//! takes no new request.
//!
//! `open.rs` opens a session and its stream, `deliver.rs` hands a `POST` to it, `table.rs`
//! holds the open sessions, `transport.rs` is rmcp's side of one.

mod calls;
mod deliver;
mod open;
mod outbox;
mod table;
mod transport;

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    routing::{get, post},
};
use carmy_core::Context;
use tokio_util::sync::CancellationToken;

use self::table::Table;
pub(super) use super::checks::Allowed;
use super::sessions::Sessions;
use crate::{server::McpServer, transport::http::auth::DynAuthenticator};

/// Where the legacy transport's event stream is opened.
pub const SSE_PATH: &str = "/sse";
/// Where the legacy transport's messages are posted (`?sessionId=…`).
pub const MESSAGES_PATH: &str = "/messages";

/// How often an idle stream carries a comment, so that a client gone away is noticed (a write
/// fails) and proxies keep the stream open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What both endpoints need.
pub(super) struct Legacy {
    pub(super) server: McpServer,
    pub(super) authenticator: Option<Arc<dyn DynAuthenticator>>,
    pub(super) base: Context,
    pub(super) allowed: Allowed,
    pub(super) max_body_bytes: usize,
    pub(super) request_timeout: Duration,
    /// Bytes waiting for a session's client past which it takes no new request.
    pub(super) max_outbox_bytes: usize,
    /// Requests in progress on a session past which it takes no new one.
    pub(super) max_in_flight: usize,
    pub(super) idle_timeout: Duration,
    /// The bounds, shared with streamable HTTP.
    pub(super) sessions: Arc<Sessions>,
    pub(super) table: Arc<Table>,
    /// Cancels every call in flight (shutdown's grace period is over).
    pub(super) calls: CancellationToken,
    /// Closes every session and its stream (shutdown).
    pub(super) close: CancellationToken,
}

impl Legacy {
    /// Authenticates a request: the context its calls run with, or the `401` to answer.
    async fn authenticate(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Context, axum::response::Response> {
        match &self.authenticator {
            Some(authenticator) => authenticator
                .authenticate_boxed(parts, self.base.clone())
                .await
                .map_err(|refused| super::refusal::unauthorized(&refused)),
            None => Ok(self.base.clone()),
        }
    }
}

/// The two endpoints, [`SSE_PATH`] and [`MESSAGES_PATH`].
pub(super) fn router(legacy: Legacy) -> Router {
    Router::new()
        .route(SSE_PATH, get(open::open))
        .route(MESSAGES_PATH, post(deliver::deliver))
        .with_state(Arc::new(legacy))
}
