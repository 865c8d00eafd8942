//! `POST /messages?sessionId=…`: one client message handed to its session, answered `202`
//! once rmcp has it; what rmcp answers goes out on the session's stream. Authenticated and
//! checked as a streamable HTTP `POST` is (allow-lists, body limit, deadline), and let through
//! only to a session its principal opened.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::{Request, State},
    response::Response,
};
use http::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, JsonRpcMessage};
use tokio::time::Instant;

use super::Legacy;
use crate::{
    net::http::{body, refusal},
    scope::RequestScope,
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
    let Some(session) = legacy.table.get(id, context.principal()) else {
        return refusal::unknown_session();
    };
    let deadline = Instant::now() + legacy.request_timeout;
    let delivered = async {
        let message = body::read(&parts.headers, body, legacy.max_body_bytes).await?;
        let mut message = serde_json::from_slice::<ClientJsonRpcMessage>(&message.bytes)
            .map_err(|error| refusal::not_json_rpc(&error))?;
        if let JsonRpcMessage::Request(request) = &mut message {
            // The call stops at the request's deadline, when its session closes, or at the end
            // of shutdown's grace period; its answer on the stream ends the watch.
            let cancellation = legacy.calls.child_token();
            session.begin(request.id.clone(), cancellation.clone());
            let (watched, closed) = (cancellation.clone(), session.closed.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => watched.cancel(),
                    () = closed.cancelled() => watched.cancel(),
                    () = watched.cancelled() => {}
                }
            });
            request.request.extensions_mut().insert(RequestScope {
                context,
                cancellation,
            });
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
