//! [`SqliteStoreOptions`]: the bounds and timings of a `SqliteStore`, with their defaults and
//! builder methods.

use std::time::Duration;

/// Bounds and timings of a [`SqliteStore`](super::SqliteStore). The bounds of request ids are
/// `MemoryStore`'s, sized for a disk rather than a process's memory: a principal may keep two
/// hundred times as many (only writes keep one, see `carmy_core::IdempotencyStore`). The
/// retention is the same, and the tasks' bounds are `MemoryTaskStore`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteStoreOptions {
    /// Request ids one principal may hold at once (default 2,000,000): each a write's, kept
    /// for `ttl` once settled. Past it, that principal's new ones are refused
    /// (`StoreError::share_full`, `CAPACITY` to the caller) until its oldest are forgotten.
    pub max_entries_per_principal: usize,
    /// Bytes one principal's keys and outcomes may take (default 2 GiB).
    pub max_bytes_per_principal: usize,
    /// Request ids across all principals (default 10,000,000).
    pub max_entries: usize,
    /// Bytes across all principals (default 8 GiB).
    pub max_bytes: usize,
    /// The largest outcome kept for replay, as stored JSON (default 1 MiB). A larger one (or
    /// one that does not fit in its principal's share) is kept as a note that the call ran:
    /// retries get `OUTCOME_NOT_KEPT` instead of running it again.
    pub max_outcome_bytes: usize,
    /// How long a settled key is kept once settled (default 24 hours).
    pub ttl: Duration,
    /// How long a call waits for another process's write lock before it fails closed
    /// (default 5 s).
    pub busy_timeout: Duration,
    /// How often expired leases are settled and old keys and tasks forgotten in the
    /// background, besides whenever a call looks at them (default 60 s).
    pub sweep_interval: Duration,
    /// Tasks one principal may hold at once, running or kept for their ttl (default 1,000).
    pub max_tasks_per_principal: usize,
    /// Tasks across all principals (default 10,000).
    pub max_tasks: usize,
    /// Bytes one principal's tasks may take, as stored (default 16 MiB).
    pub max_task_bytes_per_principal: usize,
    /// Bytes across all principals' tasks (default 128 MiB).
    pub max_task_bytes: usize,
    /// The largest task outcome kept, as stored JSON (default 1 MiB). A larger one (or one that
    /// does not fit in its principal's share) is kept as a note that the call ran
    /// (`OUTCOME_NOT_KEPT`).
    pub max_task_outcome_bytes: usize,
}

impl Default for SqliteStoreOptions {
    fn default() -> Self {
        Self {
            max_entries_per_principal: 2_000_000,
            max_bytes_per_principal: 2 << 30,
            max_entries: 10_000_000,
            max_bytes: 8 << 30,
            max_outcome_bytes: 1 << 20,
            ttl: Duration::from_secs(24 * 60 * 60),
            busy_timeout: Duration::from_secs(5),
            sweep_interval: Duration::from_secs(60),
            max_tasks_per_principal: 1_000,
            max_tasks: 10_000,
            max_task_bytes_per_principal: 16 << 20,
            max_task_bytes: 128 << 20,
            max_task_outcome_bytes: 1 << 20,
        }
    }
}

impl SqliteStoreOptions {
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

    /// Replaces the bound on the bytes of one principal's tasks.
    #[must_use]
    pub fn with_max_task_bytes_per_principal(mut self, max_bytes: usize) -> Self {
        self.max_task_bytes_per_principal = max_bytes;
        self
    }

    /// Replaces the bound on the bytes of tasks across principals.
    #[must_use]
    pub fn with_max_task_bytes(mut self, max_bytes: usize) -> Self {
        self.max_task_bytes = max_bytes;
        self
    }

    /// Replaces the largest task outcome kept.
    #[must_use]
    pub fn with_max_task_outcome_bytes(mut self, max_bytes: usize) -> Self {
        self.max_task_outcome_bytes = max_bytes;
        self
    }
}
