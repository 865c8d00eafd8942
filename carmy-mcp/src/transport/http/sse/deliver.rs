//! `POST /messages?sessionId=…`: one client message handed to its session, answered `202`
//! once rmcp has it; what rmcp answers goes out on the session's stream. Authenticated and
//! checked as a streamable HTTP `POST` is (allow-lists, body limit, id length, deadline), and
//! let through only to a session its principal opened.
//!
//! A `202` promises nothing back but what is answered on the stream, so the session takes a
//! request only while it can: while fewer than `max_in_flight` are in progress (`calls.rs`) and
//! its client is not behind in reading its stream (`outbox.rs`). Otherwise the request is
//! refused `429` with `Retry-After`, as a JSON-RPC `CAPACITY` error naming it. Notifications
//! and answers from the client (a cancellation above all) are always let through.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::{Request, State},
    response::Response,
};
use http::StatusCode;
use rmcp::model::{GetExtensions, JsonRpcMessage};
use tokio::time::Instant;

use super::Legacy;
use crate::{
    scope::RequestScope,
    transport::http::{
        body,
        refusal::{self, Backlog},
    },
};

pub(super) async fn deliver(State(legacy): State<Arc<Legacy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Some(refused) = legacy.allowed.refusal(&parts.uri, &parts.headers) {
        return refused;
    }
    let context = match legacy.authenticate(&parts).await {
        Ok(context) => context,
        Err(refused) => return refused,
    };
    let Some(id) = session_of(parts.uri.query()) else {
        return plain(
            StatusCode::BAD_REQUEST,
            "Bad Request: the sessionId query parameter is required",
        );
    };
    let Some(session) = legacy
        .table
        .get(id, context.principal())
        .filter(|session| !session.closed.is_cancelled())
    else {
        return refusal::unknown_session();
    };
    let deadline = Instant::now() + legacy.request_timeout;
    let delivered = async {
        let mut message = body::read_message(&parts.headers, body, legacy.max_body_bytes).await?;
        if let JsonRpcMessage::Request(request) = &mut message {
            if session.outbox.is_behind() {
                let max = legacy.max_outbox_bytes;
                return Err(refusal::backlog(Backlog::Outbox { max }, &request.id));
            }
            // The call stops at the request's deadline, when its session closes, or at the end
            // of shutdown's grace period.
            let cancellation = legacy.calls.child_token();
            let Some(call) = session.calls.begin(
                legacy.max_in_flight,
                deadline,
                cancellation.clone(),
                session.closed.clone(),
            ) else {
                let max = legacy.max_in_flight;
                return Err(refusal::backlog(Backlog::InFlight { max }, &request.id));
            };
            let extensions = request.request.extensions_mut();
            extensions.insert(RequestScope {
                context,
                cancellation,
            });
            extensions.insert(call);
        }
        session
            .inbound
            .send(message)
            .await
            .map_err(|_| refusal::unknown_session())
    };
    match tokio::time::timeout_at(deadline, delivered).await {
        Ok(Ok(())) => plain(StatusCode::ACCEPTED, "Accepted"),
        Ok(Err(refused)) => refused,
        Err(_) => refusal::deadline_exceeded(),
    }
}

/// The `sessionId` of a query string.
fn session_of(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="))
        .filter(|id| !id.is_empty())
}

fn plain(status: StatusCode, message: &'static str) -> Response {
    let mut response = Response::new(Body::from(message));
    *response.status_mut() = status;
    response
}
