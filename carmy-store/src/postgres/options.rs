//! [`PostgresStoreOptions`]: the bounds of `MemoryStore` and `SqliteStore`, those of
//! `MemoryTaskStore` for tasks, and what a store on a server needs besides (its pool, its
//! timeouts, the schema its tables live in).

use std::time::Duration;

use carmy_core::{Quotas, StoreError};

/// Bounds, timings and place of a [`PostgresStore`](super::PostgresStore). The bounds and the
/// retention of request ids are `SqliteStore`'s (with the same defaults, sized for a disk), those
/// of tasks `MemoryTaskStoreLimits`', so moving from the file to the database changes where keys
/// and tasks live, not how many.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresStoreOptions {
    /// The request ids (of writes) kept, each for `ttl` once settled: 2,000,000 and 2 GiB per
    /// principal, 10,000,000 and 8 GiB in all, outcomes of at most 1 MiB as stored JSON (by
    /// default). Past its share, a principal's new ones are refused (`StoreError::share_full`,
    /// `CAPACITY` to the caller) until its oldest are forgotten. The totals are checked without
    /// a lock (see [`PostgresStore`](super::PostgresStore)): claims committing at the same
    /// instant may pass them by their number, at most.
    pub request_ids: Quotas,
    /// How long a settled key is kept once settled (default 24 hours).
    pub ttl: Duration,
    /// The tasks kept, running or ended: 1,000 and 16 MiB per principal, 10,000 and 128 MiB in
    /// all, outcomes of at most 1 MiB as stored JSON (by default); the totals are checked like
    /// those of request ids. How long a task is kept once it ended is the task's own `ttl`.
    pub tasks: Quotas,
    /// Connections this store opens at most, besides the one it listens on (default 16).
    pub pool_size: usize,
    /// How long a call waits for a connection, from the pool or a new one, before it fails
    /// closed (default 5 s).
    pub connect_timeout: Duration,
    /// How long a call may take on the database once it has a connection, before it fails
    /// closed (default 5 s). The server enforces it on each statement (`statement_timeout`),
    /// so a lock wait ends there too; the store enforces it on the whole call, for a server
    /// that stopped answering.
    pub statement_timeout: Duration,
    /// How often expired leases are settled and old keys forgotten in the background, besides
    /// whenever a claim looks at them (default 60 s).
    pub sweep_interval: Duration,
    /// The PostgreSQL schema the store's tables live in (default `carmy`): lowercase letters,
    /// digits and `_`, at most 48 bytes, not starting with a digit or `pg_`. Stores with
    /// different schemas in one database never meet.
    pub schema: String,
}

impl Default for PostgresStoreOptions {
    fn default() -> Self {
        Self {
            request_ids: Quotas::new(2_000_000, 2 << 30, 10_000_000, 8 << 30, 1 << 20),
            ttl: Duration::from_secs(24 * 60 * 60),
            tasks: Quotas::new(1_000, 16 << 20, 10_000, 128 << 20, 1 << 20),
            pool_size: 16,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(5),
            sweep_interval: Duration::from_secs(60),
            schema: "carmy".to_owned(),
        }
    }
}

impl PostgresStoreOptions {
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

    /// Replaces how many connections the store opens at most.
    #[must_use]
    pub fn with_pool_size(mut self, pool_size: usize) -> Self {
        self.pool_size = pool_size;
        self
    }

    /// Replaces how long a call waits for a connection.
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Replaces how long a call may take on the database.
    #[must_use]
    pub fn with_statement_timeout(mut self, timeout: Duration) -> Self {
        self.statement_timeout = timeout;
        self
    }

    /// Replaces how often the background sweep runs.
    #[must_use]
    pub fn with_sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval;
        self
    }

    /// Replaces the schema the tables live in.
    #[must_use]
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Refuses options the store could not honour, before anything is opened.
    pub(super) fn check(&self) -> Result<(), StoreError> {
        let invalid = |why: String| Err(StoreError::unavailable(format!("invalid options: {why}")));
        let schema = self.schema.as_str();
        // The name is written into SQL (and a NOTIFY channel) as an identifier, so it is held
        // to a form that needs no quoting rules: nothing a caller passes can change a statement.
        let well_formed = !schema.is_empty()
            && schema.len() <= 48
            && schema
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
            && !schema.as_bytes()[0].is_ascii_digit()
            && !schema.starts_with("pg_");
        if !well_formed {
            return invalid(format!(
                "the schema `{schema}` is not lowercase letters, digits and `_` (at most 48 bytes, \
                 not starting with a digit or `pg_`)"
            ));
        }
        if self.pool_size == 0 {
            return invalid("a pool of no connections".into());
        }
        for (name, value) in [
            ("connect_timeout", self.connect_timeout),
            ("statement_timeout", self.statement_timeout),
        ] {
            // PostgreSQL reads a statement_timeout of 0 as "none": a store must never wait
            // without a bound.
            if value < Duration::from_millis(1) {
                return invalid(format!("{name} is under a millisecond"));
            }
        }
        Ok(())
    }
}
