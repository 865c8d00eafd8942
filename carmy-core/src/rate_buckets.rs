//! Rate limits: how often one principal may call one tool. Each tool that has a limit keeps a
//! token bucket per principal (GCRA, from `governor`): `burst` calls at once, then one more
//! every `period / requests`. A call over the limit is refused before it runs, with
//! `RATE_LIMITED` (retryable) and how long to wait in its details, and is recorded as rejected;
//! its request id stays free for the retry.
//!
//! A tool's limit is its own (`#[tool(rate_limit = "30/min")]`), else the runtime's
//! ([`Carmy::rate_limit`](crate::Carmy::rate_limit)), else none. By default the buckets live in
//! the process: replicas each count their own calls, so `n` replicas behind a balancer allow up
//! to `n` times the rate. A runtime given a [`RateLimitStore`](crate::RateLimitStore)
//! ([`Carmy::rate_limit_store`](crate::Carmy::rate_limit_store): `carmy-store`'s PostgreSQL and
//! Redis stores) takes each call from the store's buckets instead, shared by every replica, and
//! from the ones here only while the store cannot answer (docs/07-stores-and-replicas.md,
//! "Replicas and rate limits"). Adapters' limits before any call (HTTP's per address) stay in
//! the process.

use std::{
    fmt,
    hash::Hash,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use governor::{
    RateLimiter as Governor,
    clock::{Clock, DefaultClock},
    state::keyed::DefaultKeyedStateStore,
};

use crate::{error::AgentError, rate_limit::RateLimit};
/// How many keys a [`RateBuckets`] may hold before the full buckets (those that would allow a
/// whole burst anyway, so forgetting them changes nothing) are dropped: keeps memory bounded when
/// callers come and go. After a pruning, the next waits until the keys left have doubled, so a
/// flood of live keys costs each check its lookup only, not a sweep.
const PRUNE_ABOVE: usize = 4096;

/// Token buckets for one [`RateLimit`], one per key (a principal, a client address): the
/// runtime's per-tool limits, and adapters' limits before any call (HTTP's per address).
///
/// ```
/// use carmy_core::{RateBuckets, RateLimit};
///
/// let buckets = RateBuckets::new(RateLimit::per_minute(60).burst(1)).unwrap();
/// assert!(buckets.check(&"10.0.0.1").is_ok());
/// let wait = buckets.check(&"10.0.0.1").unwrap_err();
/// assert!(wait <= std::time::Duration::from_secs(1));
/// assert!(buckets.check(&"10.0.0.2").is_ok());
/// ```
pub struct RateBuckets<K: Hash + Eq + Clone> {
    limit: RateLimit,
    buckets: Governor<K, DefaultKeyedStateStore<K>, DefaultClock>,
    /// The number of keys past which the next pruning runs.
    prune_at: AtomicUsize,
}

impl<K: Hash + Eq + Clone> RateBuckets<K> {
    /// The buckets of `limit`, or `None` when it is [unlimited](RateLimit::unlimited).
    pub fn new(limit: RateLimit) -> Option<Self> {
        Some(Self {
            buckets: Governor::keyed(limit.quota()?),
            limit,
            prune_at: AtomicUsize::new(PRUNE_ABOVE),
        })
    }

    /// Takes one request from `key`'s bucket, or says how long until it holds one.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        let checked = self.buckets.check_key(key);
        if self.buckets.len() > self.prune_at.load(Ordering::Relaxed) {
            self.buckets.retain_recent();
            let left = self.buckets.len();
            self.prune_at
                .store(left.saturating_mul(2).max(PRUNE_ABOVE), Ordering::Relaxed);
        }
        checked.map_err(|not_until| not_until.wait_time_from(self.buckets.clock().now()))
    }

    /// The limit the buckets hold to.
    pub fn limit(&self) -> RateLimit {
        self.limit
    }
}

impl<K: Hash + Eq + Clone> fmt::Debug for RateBuckets<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateBuckets")
            .field("limit", &self.limit)
            .field("keys", &self.buckets.len())
            .finish()
    }
}

/// One tool's buckets, one per principal (`None`: calls without one share a bucket).
#[derive(Debug)]
pub(crate) struct ToolRateLimiter(RateBuckets<Option<Arc<str>>>);

impl ToolRateLimiter {
    /// The buckets for `limit`, or `None` when it is unlimited.
    pub(crate) fn new(limit: RateLimit) -> Option<Self> {
        RateBuckets::new(limit).map(Self)
    }

    /// The limit the buckets hold to.
    pub(crate) fn limit(&self) -> RateLimit {
        self.0.limit()
    }

    /// Takes one call from the principal's bucket, or refuses with `RATE_LIMITED`.
    pub(crate) fn check(&self, tool: &str, principal: Option<Arc<str>>) -> Result<(), AgentError> {
        self.0
            .check(&principal)
            .map_err(|wait| AgentError::tool_rate_limited(tool, self.0.limit(), wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let limiter = ToolRateLimiter::new(RateLimit::per_minute(60).burst(2)).unwrap();
        let alice: Option<Arc<str>> = Some("alice".into());
        assert!(limiter.check("t", alice.clone()).is_ok());
        assert!(limiter.check("t", alice.clone()).is_ok());
        let refused = limiter.check("t", alice.clone()).unwrap_err();
        assert_eq!(refused.code(), "RATE_LIMITED");
        assert!(refused.retryable());
        let details = refused.details().unwrap();
        assert_eq!(details["tool"], "t");
        assert_eq!(details["requests"], 60);
        assert_eq!(details["period_ms"], 60_000);
        assert_eq!(details["burst"], 2);
        // One request back every second: the wait is at most that.
        let wait = details["retry_after_ms"].as_u64().unwrap();
        assert!((1..=1000).contains(&wait), "{wait}");
    }

    #[test]
    fn each_principal_has_its_own_bucket() {
        let limiter = ToolRateLimiter::new(RateLimit::per_hour(1)).unwrap();
        let alice: Option<Arc<str>> = Some("alice".into());
        let bob: Option<Arc<str>> = Some("bob".into());
        assert!(limiter.check("t", alice.clone()).is_ok());
        assert!(limiter.check("t", alice.clone()).is_err());
        assert!(limiter.check("t", bob.clone()).is_ok());
        assert!(limiter.check("t", None).is_ok());
        assert!(limiter.check("t", None).is_err());
    }

    #[test]
    fn full_buckets_are_forgotten_past_the_bound() {
        // Each bucket refills within a millisecond of its request.
        let buckets = RateBuckets::new(RateLimit::per_second(1000)).unwrap();
        for key in 0..PRUNE_ABOVE {
            assert!(buckets.check(&key).is_ok());
        }
        assert_eq!(buckets.buckets.len(), PRUNE_ABOVE);
        std::thread::sleep(Duration::from_millis(20));
        // One key past the bound: the full buckets are dropped, the new one kept.
        assert!(buckets.check(&usize::MAX).is_ok());
        assert!(buckets.buckets.len() <= 1, "{}", buckets.buckets.len());
    }

    #[test]
    fn unlimited_has_no_buckets() {
        assert!(ToolRateLimiter::new(RateLimit::unlimited()).is_none());
        assert_eq!(RateLimit::unlimited().burst(3), RateLimit::unlimited());
        assert_eq!(RateLimit::per_second(10).burst_size(), Some(10));
        assert_eq!(RateLimit::per_second(10).to_string(), "10/s");
    }
}
