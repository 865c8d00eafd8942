//! Connections past the bound: each is answered once and closed, `/health` as usual and
//! anything else `503` with `Retry-After`. A server whose every connection is busy (slow calls,
//! long streams) still answers at once, its health included, instead of leaving new clients
//! unanswered until a connection ends.
//!
//! These connections are few and short: at most an eighth as many as the bound at once (past
//! that, a new one is closed unanswered), each with one request, read and answered within the
//! deadline of a request head.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::{rt::TokioIo, service::TowerToHyperService};
use tokio::net::TcpStream;

use super::MAX_HEAD_BYTES;

/// Serves the connections there is no room for.
pub(super) struct Overflow {
    /// What they are answered: the health endpoint, and a refusal for anything else.
    router: Router,
    http: http1::Builder,
    /// Being answered now.
    open: AtomicUsize,
    max: usize,
    /// For the whole exchange.
    deadline: Duration,
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
            open: AtomicUsize::new(0),
            max: max_connections.div_ceil(8).max(1),
            deadline,
        }
    }

    /// Answers `stream` once and closes it; closes it at once if as many are being answered as
    /// may be.
    pub(super) fn answer(self: &Arc<Self>, stream: TcpStream) {
        let counted = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.max).then_some(open + 1)
            });
        if counted.is_err() {
            tracing::debug!("no room for a connection, nor to refuse it: closing it unanswered");
            return;
        }
        let overflow = Arc::clone(self);
        tokio::spawn(async move {
            let _counted = Counted(&overflow.open);
            let service = TowerToHyperService::new(overflow.router.clone());
            let connection = overflow
                .http
                .serve_connection(TokioIo::new(stream), service);
            match tokio::time::timeout(overflow.deadline, connection).await {
                Ok(Err(error)) => tracing::debug!(%error, "a connection past the bound ended"),
                Ok(Ok(())) => {}
                Err(_) => tracing::debug!("a connection past the bound sent no request in time"),
            }
        });
    }
}

/// One connection being answered, until dropped.
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
