//! A session's requests in progress: how many (at most
//! [`HttpServer::max_in_flight`](crate::HttpServer::max_in_flight); past it a `POST` is refused
//! `429`), and the deadline of each.
//!
//! A request counts from its `POST` until rmcp is done with it, however it ends: answered,
//! cancelled by its client (rmcp then drops its answer), stopped at its deadline, or dropped
//! with its session. What marks the end is the request itself: its [`Call`] travels in the
//! request's extensions into rmcp's context for it, and is dropped with that context. Nothing
//! is kept by request id, so no id outlives its request.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The requests of one session in progress.
#[derive(Default)]
pub(super) struct Calls {
    running: Arc<AtomicUsize>,
}

/// One request in progress, until the last copy of it is dropped (rmcp's extensions are
/// copied with their request).
#[derive(Clone)]
pub(super) struct Call {
    _running: Arc<Running>,
}

struct Running {
    running: Arc<AtomicUsize>,
    /// Ends the watch on the request's deadline.
    _watch: DropGuard,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Calls {
    /// Counts a request in, unless `max` are in progress. Until it ends, its `cancellation` is
    /// cancelled at `deadline` or when `closed` (its session) is.
    pub(super) fn begin(
        &self,
        max: usize,
        deadline: Instant,
        cancellation: CancellationToken,
        closed: CancellationToken,
    ) -> Option<Call> {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
                (running < max).then_some(running + 1)
            })
            .ok()?;
        let ended = CancellationToken::new();
        let watch = ended.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => cancellation.cancel(),
                () = closed.cancelled() => cancellation.cancel(),
                () = watch.cancelled() => {}
            }
        });
        Some(Call {
            _running: Arc::new(Running {
                running: Arc::clone(&self.running),
                _watch: ended.drop_guard(),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_request_counts_until_its_last_copy_is_dropped_and_its_deadline_cancels_it() {
        let calls = Calls::default();
        let later = Instant::now() + Duration::from_secs(60);
        let begin = |deadline, cancellation| {
            calls.begin(2, deadline, cancellation, CancellationToken::new())
        };
        let first = begin(later, CancellationToken::new()).expect("room");
        let copy = first.clone();
        let late = CancellationToken::new();
        let second = begin(Instant::now(), late.clone()).expect("room");
        assert!(
            begin(later, CancellationToken::new()).is_none(),
            "at the bound"
        );
        late.cancelled().await;
        drop(first);
        assert!(
            begin(later, CancellationToken::new()).is_none(),
            "a copy is left"
        );
        drop((copy, second));
        assert!(begin(later, CancellationToken::new()).is_some());
    }
}
