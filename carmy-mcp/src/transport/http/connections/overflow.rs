//! Connections past the bound: each is answered once and closed, `/health` as usual and
//! anything else `503` with `Retry-After`. A server whose every connection is busy (slow calls,
//! long streams) still answers at once, its health included, instead of leaving new clients
//! unanswered until a connection ends.
//!
//! These connections are few and short: at most an eighth as many as the bound at once, each
//! with one request, read and answered within the deadline of a request head. When as many are
//! open, the oldest is closed to make room, as the oldest connection waiting for a request is
//! in the table: an honest request arrives in one packet and is answered at once, so heads that
//! never end cannot keep it out.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::{rt::TokioIo, service::TowerToHyperService};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::MAX_HEAD_BYTES;
use crate::sync::lock;

/// Serves the connections there is no room for.
pub(super) struct Overflow {
    /// What they are answered: the health endpoint, and a refusal for anything else.
    router: Router,
    http: http1::Builder,
    /// Those being answered, oldest first: an id, and what closes it.
    open: Mutex<Open>,
    max: usize,
    /// For the whole exchange.
    deadline: Duration,
}

#[derive(Default)]
struct Open {
    next_id: u64,
    connections: VecDeque<(u64, CancellationToken)>,
}

impl Overflow {
    pub(super) fn new(router: Router, max_connections: usize, deadline: Duration) -> Self {
        let mut http = http1::Builder::new();
        http.keep_alive(false)
            .max_header_size(MAX_HEAD_BYTES)
            .max_buf_size(MAX_HEAD_BYTES);
        Self {
            router,
            http,
            open: Mutex::default(),
            max: max_connections.div_ceil(8).max(1),
            deadline,
        }
    }

    /// Answers `stream` once and closes it, closing the oldest connection answered here if as
    /// many are open as may be.
    pub(super) fn answer(self: &Arc<Self>, stream: TcpStream) {
        let close = CancellationToken::new();
        let id = {
            let mut open = lock(&self.open);
            if open.connections.len() >= self.max
                && let Some((_, oldest)) = open.connections.pop_front()
            {
                oldest.cancel();
            }
            let id = open.next_id;
            open.next_id += 1;
            open.connections.push_back((id, close.clone()));
            id
        };
        let overflow = Arc::clone(self);
        tokio::spawn(async move {
            let service = TowerToHyperService::new(overflow.router.clone());
            let connection = overflow
                .http
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                answered = tokio::time::timeout(overflow.deadline, connection) => match answered {
                    Ok(Err(error)) => tracing::debug!(%error, "a connection past the bound ended"),
                    Ok(Ok(())) => {}
                    Err(_) => tracing::debug!("a connection past the bound sent no request in time"),
                },
                () = close.cancelled() => {
                    tracing::debug!("closing a connection past the bound, to make room");
                }
            }
            lock(&overflow.open)
                .connections
                .retain(|(open, _)| *open != id);
        });
    }
}
