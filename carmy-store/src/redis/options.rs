//! [`RedisStoreOptions`]: the bounds and retention of the other stores, and what a store on a
//! server needs besides.

use std::time::Duration;

use carmy_core::Quotas;

/// Bounds, timings and key prefix of a [`RedisStore`](super::RedisStore). The bounds of request
/// ids are `MemoryStore`'s, sized for a Redis server rather than a process (a hundred times as
/// many per principal; only writes keep one), and smaller than `SqliteStore`'s and
/// `PostgresStore`'s because Redis keeps every key in its memory; the retention is the same;
/// the bounds of tasks are [`MemoryTaskStoreLimits`](carmy_core::MemoryTaskStoreLimits)'s,
/// counted apart from the keys. They are the bounds of one prefix: every replica sharing it
/// should be given the same.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisStoreOptions {
    /// The request ids (of writes) kept, each for `ttl` once settled: 1,000,000 and 1 GiB per
    /// principal, 4,000,000 and 4 GiB in all, outcomes of at most 1 MiB as stored JSON (by
    /// default). Bytes are as the store counts them: a key's names and bookkeeping, and its
    /// outcome as stored JSON. Keep Redis's own `maxmemory` above the total: a server out of
    /// memory refuses the store's writes (and the store fails closed). Past its share, a
    /// principal's new ones are refused (`StoreError::share_full`, `CAPACITY` to the caller)
    /// until its oldest are forgotten.
    pub request_ids: Quotas,
    /// How long a settled key is kept once settled (default 24 hours).
    pub ttl: Duration,
    /// The tasks kept, running or ended: 1,000 and 16 MiB per principal, 10,000 and 128 MiB in
    /// all, outcomes of at most 1 MiB as stored JSON (by default). Bytes are as the store counts
    /// them: a task's names and bookkeeping, and its record as stored JSON (questions, answers
    /// and outcome included).
    pub tasks: Quotas,
    /// How long connecting to Redis may take, the TCP connection and its handshake, before
    /// the call that needed it fails closed (default 2 s).
    pub connect_timeout: Duration,
    /// How long Redis may take to answer one call before it fails closed (default 2 s).
    pub response_timeout: Duration,
    /// What every key the store writes starts with (default `carmy:`): apps, or test cases,
    /// sharing one Redis each keep to their own prefix. Braces are refused (the store adds
    /// the hash tags itself).
    pub prefix: String,
}

impl Default for RedisStoreOptions {
    fn default() -> Self {
        Self {
            request_ids: Quotas::new(1_000_000, 1 << 30, 4_000_000, 4 << 30, 1 << 20),
            ttl: Duration::from_secs(24 * 60 * 60),
            tasks: Quotas::new(1_000, 16 << 20, 10_000, 128 << 20, 1 << 20),
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(2),
            prefix: "carmy:".to_owned(),
        }
    }
}

impl RedisStoreOptions {
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

    /// Replaces the quotas of tasks with what `change` makes of them.
    #[must_use]
    pub fn with_tasks(mut self, change: impl FnOnce(Quotas) -> Quotas) -> Self {
        self.tasks = change(self.tasks);
        self
    }

    /// Replaces how long connecting may take.
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Replaces how long one answer may take.
    #[must_use]
    pub fn with_response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Replaces the prefix of every key the store writes.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
}
