//! `ping`: does the server answer?
//!
//! 2025-11-25 has `ping`. 2026-07-28 removed it; what a client of that revision sends to learn
//! whether a server is there is `server/discover`, so that is what is sent, and said.

use std::time::Instant;

use rmcp::model::{ClientRequest, DiscoverRequest, DiscoverRequestParams, PingRequest};

use super::Run;
use crate::exit::Outcome;

pub(super) async fn ping(run: &Run) -> Outcome {
    let peer = run.session.peer();
    let legacy = run.legacy();
    let request = if legacy {
        ClientRequest::PingRequest(PingRequest::default())
    } else {
        ClientRequest::DiscoverRequest(DiscoverRequest::new(DiscoverRequestParams::default()))
    };
    let started = Instant::now();
    let method = if legacy { "ping" } else { "server/discover" };
    let answer = run.send(method, peer.send_request(request)).await?;
    let elapsed = started.elapsed();
    run.print(&answer, |_| {
        Ok(format!(
            "the server answered {method} in {:.1} ms",
            elapsed.as_secs_f64() * 1000.0
        ))
    })
}
