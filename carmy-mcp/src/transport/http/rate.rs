//! A limit on the HTTP requests one client address may send, before any other work (before
//! authentication too, so a flood of bad tokens is limited as well): past it, `429 Too Many
//! Requests` with `Retry-After`, and a JSON-RPC error whose data is a `RATE_LIMITED` error.
//! The health endpoint is exempt, for load balancers.
//!
//! The address is the TCP peer's: behind a reverse proxy every request comes from the proxy,
//! which should then limit by client itself. A router merged into an application of one's own
//! ([`HttpServer::into_router`](super::HttpServer::into_router)) finds the peer in axum's
//! `ConnectInfo<SocketAddr>` (`into_make_service_with_connect_info`); without it, all its
//! requests share one bucket.

use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use axum::{
    extract::{ConnectInfo, Request, State},
    middleware::Next,
    response::Response,
};
use carmy_core::{RateBuckets, RateLimit};

use super::{HEALTH_PATH, refusal};

/// The buckets, one per client address.
pub(super) struct AddressLimiter(RateBuckets<Option<IpAddr>>);

impl AddressLimiter {
    /// The limiter for `limit`, or `None` when it is unlimited.
    pub(super) fn new(limit: RateLimit) -> Option<Arc<Self>> {
        RateBuckets::new(limit).map(|buckets| Arc::new(Self(buckets)))
    }

    fn check(&self, peer: Option<IpAddr>) -> Result<(), Duration> {
        self.0.check(&peer)
    }
}

pub(super) async fn limit_request(
    State(limiter): State<Arc<AddressLimiter>>,
    request: Request,
    next: Next,
) -> Response {
    if request.uri().path() == HEALTH_PATH {
        return next.run(request).await;
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    match limiter.check(peer) {
        Ok(()) => next.run(request).await,
        Err(wait) => {
            tracing::debug!(
                ?peer,
                wait_ms = wait.as_millis(),
                "HTTP request over the rate limit"
            );
            refusal::rate_limited(limiter.0.limit(), wait)
        }
    }
}
