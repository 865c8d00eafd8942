//! Rate limits kept where replicas share them: a [`RateLimitStore`] holds one bucket per tool
//! and principal, so the limit holds across every runtime that uses it, not once per process.
//!
//! By default there is no store: each tool's buckets live in the process
//! ([`RateBuckets`](crate::RateBuckets)), checked in place without a store call. A runtime
//! given one with [`Carmy::rate_limit_store`](crate::Carmy::rate_limit_store) asks it instead,
//! once for each call of a tool that has a limit (a tool without one costs nothing).
//!
//! # Semantics
//!
//! A store's buckets behave as this process's do (GCRA): a bucket that was never drawn, or has
//! refilled, admits [`burst_size`](crate::RateLimit::burst_size) calls at once, then one more
//! every [`emission_interval`](crate::RateLimit::emission_interval). A store keeps one instant
//! per bucket, its theoretical arrival time `tat` (when the bucket would be full again); a call
//! at `now` is admitted when `tat - tolerance <= now` (with
//! [`tolerance`](crate::RateLimit::tolerance) `= interval × (burst − 1)`), which moves `tat` to
//! `max(tat, now) + interval`; otherwise it is refused with the wait `tat - tolerance - now`.
//! A bucket whose `tat` has passed is the same as none, so the store may forget it. Times are
//! the store's own clock (the database server's), never a replica's, so replicas agree.
//!
//! # When the store cannot answer
//!
//! A store that fails (down, timed out) neither refuses every call nor lifts the limit: the
//! call is checked against this process's own bucket for that tool and principal instead, and
//! a warning is logged (at most once every [`FALLBACK_WARNING_EVERY`]). While the store is
//! away, each replica enforces the limit on its own, so `n` replicas allow up to `n` times it;
//! once the store answers again, the shared buckets are back (they never saw the calls counted
//! locally meanwhile).

mod fallback;

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use crate::{idempotency::StoreError, rate_limit::RateLimit};

pub(crate) use fallback::RateLimits;

/// The shortest time between two warnings that the rate-limit store could not answer.
pub const FALLBACK_WARNING_EVERY: Duration = Duration::from_secs(5);

/// Where the buckets of rate-limited tools are kept when replicas share them (see the
/// [module](self)): `carmy-store`'s PostgreSQL and Redis stores. Without one, each process
/// keeps its own.
///
/// What an implementation promises:
/// - `take` is atomic: of any number of concurrent takes from one bucket, on any number of
///   replicas sharing the store, no more are admitted than the bucket holds;
/// - its buckets are those of the [module](self)'s GCRA, on one clock all its users share;
/// - tools and principals never share a bucket (`None`, the anonymous principal, is one
///   bucket per tool);
/// - a bucket that has refilled is forgotten in time, so the store stays bounded by the
///   buckets in use;
/// - when it cannot answer, it says so ([`StoreError`]); the runtime then falls back to this
///   process's bucket.
///
/// A store is shared with `Arc`; `Arc<S>` is a store too.
///
/// ```
/// use std::{collections::HashMap, sync::Mutex, time::{Duration, Instant}};
/// use carmy_core::{RateLimit, RateLimitStore, StoreError};
///
/// /// A store in memory, by the store's own clock: each bucket's theoretical arrival time.
/// #[derive(Default)]
/// struct Buckets(Mutex<HashMap<(String, Option<String>), Instant>>);
///
/// impl RateLimitStore for Buckets {
///     async fn take(
///         &self,
///         tool: &str,
///         principal: Option<&str>,
///         limit: RateLimit,
///     ) -> Result<Result<(), Duration>, StoreError> {
///         let (Some(interval), Some(tolerance)) = (limit.emission_interval(), limit.tolerance())
///         else {
///             return Ok(Ok(()));
///         };
///         let now = Instant::now();
///         let mut buckets = self.0.lock().unwrap();
///         let tat = buckets
///             .entry((tool.to_owned(), principal.map(str::to_owned)))
///             .or_insert(now);
///         let earliest = tat.checked_sub(tolerance).unwrap_or(now);
///         if earliest > now {
///             return Ok(Err(earliest - now));
///         }
///         *tat = (*tat).max(now) + interval;
///         Ok(Ok(()))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = Buckets::default();
/// let limit = RateLimit::per_minute(60).burst(2);
/// assert!(store.take("search", Some("alice"), limit).await?.is_ok());
/// assert!(store.take("search", Some("alice"), limit).await?.is_ok());
/// let wait = store.take("search", Some("alice"), limit).await?.unwrap_err();
/// assert!(wait <= Duration::from_secs(1));
/// assert!(store.take("search", Some("bob"), limit).await?.is_ok());
/// # Ok::<(), StoreError>(())
/// # }).unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a rate-limit store",
    label = "not a rate-limit store",
    note = "implement `take` of `RateLimitStore` for `{Self}`, or use one of `carmy-store`'s \
            server stores"
)]
pub trait RateLimitStore: Send + Sync + 'static {
    /// Takes one call from the bucket of `tool` and `principal` (`None`: the anonymous one)
    /// under `limit`: `Ok(Ok(()))` when admitted, `Ok(Err(wait))` when the bucket is empty for
    /// `wait` more, `Err` when the store cannot answer. `limit` is never
    /// [unlimited](RateLimit::unlimited).
    fn take(
        &self,
        tool: &str,
        principal: Option<&str>,
        limit: RateLimit,
    ) -> impl Future<Output = Result<Result<(), Duration>, StoreError>> + Send;
}

impl<S: RateLimitStore> RateLimitStore for Arc<S> {
    fn take(
        &self,
        tool: &str,
        principal: Option<&str>,
        limit: RateLimit,
    ) -> impl Future<Output = Result<Result<(), Duration>, StoreError>> + Send {
        (**self).take(tool, principal, limit)
    }
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A [`RateLimitStore`] behind a pointer: each call returns a boxed future.
pub(crate) trait DynRateLimitStore: Send + Sync + 'static {
    fn take_boxed<'a>(
        &'a self,
        tool: &'a str,
        principal: Option<&'a str>,
        limit: RateLimit,
    ) -> BoxFuture<'a, Result<Result<(), Duration>, StoreError>>;
}

impl<S: RateLimitStore> DynRateLimitStore for S {
    fn take_boxed<'a>(
        &'a self,
        tool: &'a str,
        principal: Option<&'a str>,
        limit: RateLimit,
    ) -> BoxFuture<'a, Result<Result<(), Duration>, StoreError>> {
        Box::pin(self.take(tool, principal, limit))
    }
}
