//! [`RedisStoreOptions`]: the bounds and retention of the other stores, and what a store on a
//! server needs besides.

use std::time::Duration;

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
    /// Request ids one principal may hold at once (default 1,000,000): each a write's, kept for
    /// `ttl` once settled. Past it, that principal's new ones are refused
    /// (`StoreError::share_full`, `CAPACITY` to the caller) until its oldest are forgotten.
    pub max_entries_per_principal: usize,
    /// Bytes one principal's keys and outcomes may take (default 1 GiB), as the store counts
    /// them: a key's names and bookkeeping, and its outcome as stored JSON.
    pub max_bytes_per_principal: usize,
    /// Request ids across all principals (default 4,000,000).
    pub max_entries: usize,
    /// Bytes across all principals (default 4 GiB). Keep Redis's own `maxmemory` above it:
    /// a server out of memory refuses the store's writes (and the store fails closed).
    pub max_bytes: usize,
    /// The largest outcome kept for replay, as stored JSON (default 1 MiB). A larger one (or
    /// one that does not fit in its principal's share) is kept as a note that the call ran:
    /// retries get `OUTCOME_NOT_KEPT` instead of running it again.
    pub max_outcome_bytes: usize,
    /// How long a settled key is kept once settled (default 24 hours).
    pub ttl: Duration,
    /// Tasks one principal may hold at once, running or kept (default 1,000).
    pub max_tasks_per_principal: usize,
    /// Tasks across all principals (default 10,000).
    pub max_tasks: usize,
    /// Bytes one principal's tasks may take (default 16 MiB), as the store counts them: a
    /// task's names and bookkeeping, and its record as stored JSON (questions, answers and
    /// outcome included).
    pub max_task_bytes_per_principal: usize,
    /// Bytes of tasks across all principals (default 128 MiB).
    pub max_task_bytes: usize,
    /// The largest outcome a task keeps, as stored JSON (default 1 MiB); a larger one (or one
    /// that does not fit in its principal's share) is kept as a note that the call ran
    /// (`OUTCOME_NOT_KEPT`).
    pub max_task_outcome_bytes: usize,
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
            max_entries_per_principal: 1_000_000,
            max_bytes_per_principal: 1 << 30,
            max_entries: 4_000_000,
            max_bytes: 4 << 30,
            max_outcome_bytes: 1 << 20,
            ttl: Duration::from_secs(24 * 60 * 60),
            max_tasks_per_principal: 1_000,
            max_tasks: 10_000,
            max_task_bytes_per_principal: 16 << 20,
            max_task_bytes: 128 << 20,
            max_task_outcome_bytes: 1 << 20,
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(2),
            prefix: "carmy:".to_owned(),
        }
    }
}

impl RedisStoreOptions {
    /// Replaces the bound on keys of one principal.
    #[must_use]
    pub fn with_max_entries_per_principal(mut self, max_entries: usize) -> Self {
        self.max_entries_per_principal = max_entries;
        self
    }

    /// Replaces the bound on bytes of one principal.
    #[must_use]
    pub fn with_max_bytes_per_principal(mut self, max_bytes: usize) -> Self {
        self.max_bytes_per_principal = max_bytes;
        self
    }

    /// Replaces the bound on keys across principals.
    #[must_use]
    pub fn with_max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = max_entries;
        self
    }

    /// Replaces the bound on bytes across principals.
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Replaces the largest outcome kept for replay.
    #[must_use]
    pub fn with_max_outcome_bytes(mut self, max_bytes: usize) -> Self {
        self.max_outcome_bytes = max_bytes;
        self
    }

    /// Replaces how long settled keys are kept.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Replaces the bound on tasks of one principal.
    #[must_use]
    pub fn with_max_tasks_per_principal(mut self, max_tasks: usize) -> Self {
        self.max_tasks_per_principal = max_tasks;
        self
    }

    /// Replaces the bound on tasks across principals.
    #[must_use]
    pub fn with_max_tasks(mut self, max_tasks: usize) -> Self {
        self.max_tasks = max_tasks;
        self
    }

    /// Replaces the bound on bytes of one principal's tasks.
    #[must_use]
    pub fn with_max_task_bytes_per_principal(mut self, max_bytes: usize) -> Self {
        self.max_task_bytes_per_principal = max_bytes;
        self
    }

    /// Replaces the bound on bytes of tasks across principals.
    #[must_use]
    pub fn with_max_task_bytes(mut self, max_bytes: usize) -> Self {
        self.max_task_bytes = max_bytes;
        self
    }

    /// Replaces the largest outcome a task keeps.
    #[must_use]
    pub fn with_max_task_outcome_bytes(mut self, max_bytes: usize) -> Self {
        self.max_task_outcome_bytes = max_bytes;
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
