//! [`SqliteStoreOptions`]: the bounds and timings of a `SqliteStore`, with their defaults and
//! builder methods.

use std::time::Duration;

use carmy_core::Quotas;

/// Bounds and timings of a [`SqliteStore`](super::SqliteStore). The bounds of request ids are
/// `MemoryStore`'s, sized for a disk rather than a process's memory: a principal may keep two
/// hundred times as many (only writes keep one, see `carmy_core::IdempotencyStore`). The
/// retention is the same, and the tasks' bounds are `MemoryTaskStore`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteStoreOptions {
    /// The request ids (of writes) kept, each for `ttl` once settled: 2,000,000 and 2 GiB per
    /// principal, 10,000,000 and 8 GiB in all, outcomes of at most 1 MiB as stored JSON (by
    /// default). Past its share, a principal's new ones are refused (`StoreError::share_full`,
    /// `CAPACITY` to the caller) until its oldest are forgotten.
    pub request_ids: Quotas,
    /// How long a settled key is kept once settled (default 24 hours).
    pub ttl: Duration,
    /// How long a call waits for another process's write lock before it fails closed
    /// (default 5 s).
    pub busy_timeout: Duration,
    /// How often expired leases are settled and old keys and tasks forgotten in the
    /// background, besides whenever a call looks at them (default 60 s).
    pub sweep_interval: Duration,
    /// The tasks kept, running or for their ttl once ended: 1,000 and 16 MiB per principal,
    /// 10,000 and 128 MiB in all, outcomes of at most 1 MiB, as stored (by default).
    pub tasks: Quotas,
}

impl Default for SqliteStoreOptions {
    fn default() -> Self {
        Self {
            request_ids: Quotas::new(2_000_000, 2 << 30, 10_000_000, 8 << 30, 1 << 20),
            ttl: Duration::from_secs(24 * 60 * 60),
            busy_timeout: Duration::from_secs(5),
            sweep_interval: Duration::from_secs(60),
            tasks: Quotas::new(1_000, 16 << 20, 10_000, 128 << 20, 1 << 20),
        }
    }
}

impl SqliteStoreOptions {
    /// Replaces the quotas of request ids with what `change` makes of them.
    #[must_use]
    pub fn with_request_ids(mut self, change: impl FnOnce(Quotas) -> Quotas) -> Self {
        self.request_ids = change(self.request_ids);
        self
    }

    /// Replaces how long settled keys are kept.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Replaces how long a call waits for another process's write lock.
    #[must_use]
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Replaces how often the background sweep runs.
    #[must_use]
    pub fn with_sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval;
        self
    }

    /// Replaces the quotas of tasks with what `change` makes of them.
    #[must_use]
    pub fn with_tasks(mut self, change: impl FnOnce(Quotas) -> Quotas) -> Self {
        self.tasks = change(self.tasks);
        self
    }
}
