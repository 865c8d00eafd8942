//! [`PostgresStore`]: claims and outcomes, records and tasks in a PostgreSQL database that
//! server replicas share.
//!
//! - `options`: the bounds, timings and schema;
//! - `connection`: the pool, and how every call is bounded in time and fails closed;
//! - `schema`: the tables, their triggers, and the migrations run at connect;
//! - `sql`: every statement, and the one order their locks are taken in;
//! - `claims`: the transactions of a claim, a finish and a release, and why the bounds hold;
//! - `records`: the application's records: reads, listings, and the commit that checks a
//!   run's reads, applies its writes and finishes its call, and why it is serializable;
//! - `tasks`: tasks ([`TaskStore`](carmy_core::TaskStore)): a row per task, the transactions of
//!   each call, and how the holder of a task is woken; `task_rows`: a task's row read, locked,
//!   settled and written back, and the tasks' sweep; `task_holders`: what each lease held here
//!   last read of its task;
//! - `rate_limits`: rate-limit buckets shared by replicas
//!   ([`RateLimitStore`](carmy_core::RateLimitStore)), one statement per take;
//! - `sweep`: settling what is due, in bounded batches;
//! - `waiters` and `listener`: waking the waiters of a settled key, and the holders of tasks
//!   others wrote to, here and in other processes.

mod claims;
mod connection;
mod error;
mod listener;
mod options;
mod records;
mod schema;
mod sql;
mod sweep;
mod task_holders;
mod task_rows;
mod waiters;

use std::{fmt, sync::Arc, time::Duration};

use carmy_core::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, LeaseTerms, Recorded, Release,
    StoreError,
    records::{Changes, Committed, Listing, RecordKey, RecordStore, UnclaimedCommit, Versioned},
};
use tokio::{sync::watch, task::JoinHandle, time::Instant};

pub use options::PostgresStoreOptions;

use claims::Seen;
use connection::{Database, millis};
use error::Failure;
use waiters::{Waiters, tag};

use crate::{change_feed::Feed, claim_wait::Pauses};

/// The first pause of a waiter polling for another process's claim; it doubles up to
/// [`LONGEST_POLL`] (or [`LONGEST_POLL_LISTENING`] while the listener would hear the key
/// settle), and never goes past the lease's expiry.
const FIRST_POLL: Duration = Duration::from_millis(10);
const LONGEST_POLL: Duration = Duration::from_millis(250);
const LONGEST_POLL_LISTENING: Duration = Duration::from_secs(2);

/// Runs `$work` on a connection of `$db`'s pool, bounded in time; a connection the failure
/// broke is closed instead of going back to the pool.
macro_rules! on_connection {
    ($db:expr, $what:literal, |$connection:ident| $work:expr) => {{
        let db: &Database = $db;
        match db.connection().await {
            Ok(mut $connection) => {
                let answer = db.bounded($what, $work).await;
                Database::give_back($connection, &answer);
                answer
            }
            Err(failure) => Err(failure),
        }
    }};
}

// After `on_connection!`, which they use.
mod feed;
mod rate_limits;
mod redemptions;
mod tasks;

/// An [`IdempotencyStore`] in a PostgreSQL database, shared by every replica that connects to
/// it: claims, leases and outcomes outlive any replica, and retries of one request are answered
/// the same whichever replica they reach.
///
/// What it guarantees:
/// - **Atomic claims across processes.** A claim is one transaction that locks the key's row
///   (`SELECT ... FOR UPDATE`) or inserts it (`INSERT ... ON CONFLICT DO NOTHING`): of any
///   number of concurrent claims of a key, from any number of replicas, exactly one is
///   `Acquired`, and the others see it running, then its outcome.
/// - **One clock.** Lease expiries and retention are instants of the database server's clock
///   (`statement_timestamp()`), never a replica's: replicas whose clocks differ agree on when a
///   lease runs out. A waiter is told how long the lease has left, by that clock.
/// - **Nothing held forever.** A lease is its expiry in the row; once it passes, the key
///   settles as the claim's [`LeaseTerms::if_lost`] says (uncertain for a write, free again for
///   a read) whenever a claim looks at it, and in the background sweep of every replica
///   (bounded batches). A replica that dies, even mid-transaction, leaves nothing locked past
///   its session's end.
/// - **Bounded.** Shares per principal and totals, `SqliteStore`'s (sized for a disk, see
///   [`PostgresStoreOptions`]), failing closed with
///   [`StoreError::Full`]; a live key, or one settled within
///   [`ttl`](PostgresStoreOptions::ttl), is never forgotten to make room. A principal's bounds
///   are exact. The totals are checked without serializing every claim on one row, so claims
///   committing at the same instant may pass them by at most their number (at most the sum of
///   the replicas' pool sizes).
/// - **Fails closed, in bounded time.** Whatever the server does (refuses connections,
///   restarts, holds a lock, stops answering), a call answers within
///   [`connect_timeout`](PostgresStoreOptions::connect_timeout) +
///   [`statement_timeout`](PostgresStoreOptions::statement_timeout) + 1 s (three times that
///   for a claim or a task's create that finds the totals full and sweeps for room first), with
///   [`StoreError::Unavailable`] if it could not be sure: nothing runs that was not claimed.
///   Once the server is back, the same store serves again by itself (broken connections are
///   closed and new ones made).
/// - **Prompt waiters.** A waiter (`Claim::Running`) is woken as soon as this process settles
///   the key, and by the server's `NOTIFY` (one dedicated `LISTEN` connection) when another
///   process does; it also polls, every 10 ms at first and at most every 250 ms (2 s while the
///   listener is connected), and never waits past the lease's expiry.
///
/// It keeps the application's records too ([`RecordStore`]), in the same schema, so a
/// `transactional` tool's writes commit in the transaction that finishes its call. For them:
/// - **Serializable commits, across replicas.** Before it checks any version, a commit locks
///   the row of each collection it touches: shared for one it only read or listed, exclusive
///   for one it writes into. No other commit can change what it read between its check and
///   its writes, and a record read as absent is covered by its collection's row. With an
///   outcome, the lease is checked first ([`StoreError::LeaseLost`] wins over a conflict) and
///   the key is finished exactly as [`finish`](IdempotencyStore::finish) would; a conflict
///   applies nothing and leaves the lease held.
/// - **Consistent listings.** A listing is one statement: the collection's version and its
///   records (at most [`MAX_LISTED`](carmy_core::records::MAX_LISTED), else
///   [`StoreError::Full`]) from one snapshot, in bytewise key order.
/// - **Exact values.** A value is kept as the JSON text it was written as, so it reads back
///   equal (`jsonb` would not: it rewrites numbers and refuses `\u0000`).
/// - **Fails closed** like the rest: a read, a listing or a commit that cannot reach the
///   server fails with [`StoreError::Unavailable`] in the same bounded time. A commit whose
///   answer was lost may have committed; the runtime allows for that.
///
/// It keeps tasks too ([`TaskStore`](carmy_core::TaskStore)), in the same schema, so that every
/// replica can read, answer and cancel a task any one of them runs. For them:
/// - **One transaction per call, on the task's row.** A call locks the row, settles what is due
///   by the server's clock (a lease that ran out ends the task `failed`, `EXECUTION_LOST`; a
///   task past its `ttl`, counted from its end, is forgotten), applies the rule of
///   [`TaskRecord`](carmy_core::TaskRecord) it stands for, and writes the record back: calls
///   on one task from any number of replicas take turns, and none loses another's write. A
///   holder's call applies only under the lease's token, else [`StoreError::LeaseLost`].
///   Another principal naming the task's id finds nothing.
/// - **The holder is told at once.** A cancel request, or answers taken, are announced by the
///   server at commit (`NOTIFY`, through the same listening connection), and
///   [`changed`](carmy_core::TaskStore::changed) resolves on the replica holding the task;
///   it also polls (every 2 s while the listener is connected, every 50 ms doubling up to
///   500 ms while it is not), and never resolves for a poll that failed.
/// - **Bounded** as `MemoryTaskStore` is, with the same defaults
///   ([`tasks`](PostgresStoreOptions::tasks)): a principal's bounds exact, the totals checked as the keys' are; a new task past
///   them is [`StoreError::Full`], never made room for by forgetting one early; an outcome too
///   large is kept as a note that the call ran.
/// - **Fails closed** like the rest, in the same bounded time; a task survives the server's
///   restart as it was committed.
///
/// It redeems single-use tokens too ([`RedemptionStore`](carmy_core::RedemptionStore)), in
/// the same schema: one statement per redemption, so every replica redeems a token once
/// between them; bounded per principal and in principals as `carmy_core` says (see
/// `redemptions`).
///
/// It keeps rate-limit buckets too ([`RateLimitStore`](carmy_core::RateLimitStore)), in the
/// same schema: one statement per take, by the server's clock, so every replica shares each
/// tool's limit; a bucket full again is deleted by the sweep (see `rate_limits`).
///
/// What the operator provides:
/// - PostgreSQL 11 or newer (tested with 15), reached over a **plain connection: no TLS in this
///   release**. Keep it on a socket, a private network or a tunnel; a connection string asking
///   for TLS (`sslmode=require`) fails to connect.
/// - A role that may create the store's schema in the database (`CREATE` on it), or an existing
///   schema that the role owns.
/// - A direct connection, or a pooler that keeps sessions (the store prepares statements,
///   listens, and sets `statement_timeout` with the `options` startup parameter): PgBouncer's
///   transaction mode does not.
///
/// What it costs:
/// - a claim of a new key is one transaction of a few round trips and one commit; a replay or
///   a running key, one locked read; a finish, one transaction; a release, one statement;
/// - the claims of new keys (and the finishes) of one principal commit one at a time, on its
///   share's row: that is what keeps its bounds exact. Different principals do not wait on one
///   another, but every anonymous caller is the same principal;
/// - up to [`pool_size`](PostgresStoreOptions::pool_size) connections per store, plus the
///   listening one;
/// - when a retry waits on a running call, one more write to mark the claim as waited for, and
///   a `NOTIFY` when it ends (PostgreSQL makes notifying commits take turns server-wide, so
///   claims nobody waits on are never announced);
/// - a row per key kept (its outcome inline) and one per principal holding keys;
/// - the sweep, one transaction per 500 due keys per replica, every
///   [`sweep_interval`](PostgresStoreOptions::sweep_interval);
/// - a record read or a listing, one statement; a record commit, one transaction: a round
///   trip per collection it touches, five more, and three more to finish a call with it;
/// - the commits that write into one collection take turns on its row, and one that only
///   read a collection waits for those writing into it (not for other readers); commits of
///   different collections never wait for one another;
/// - a row per record and per collection. The bounds above count idempotency keys, not
///   records: records are the application's data, and grow with it;
/// - a task's create, cancel, answer, renewal, question or finish, one transaction of a few
///   round trips; a read of a task with nothing due, one statement; a cancel or an answer,
///   a `NOTIFY`; a holder waiting for either, one small statement every 2 s;
/// - a row per task (its record, outcome included, inline) and one per principal holding
///   tasks; a principal's creates, and the calls that grow its tasks, take turns on its share's
///   row; the sweep, one transaction per 500 due tasks.
///
/// ```no_run
/// use carmy_core::{Claim, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore, LeaseTerms, Release};
/// use carmy_store::{PostgresStore, PostgresStoreOptions};
/// # async fn run() -> Result<(), carmy_core::StoreError> {
/// let store = PostgresStore::connect_with(
///     "postgres://shop@db.internal/shop",
///     PostgresStoreOptions::default().with_schema("shop_idempotency"),
/// )
/// .await?;
/// let key = IdempotencyKey::new(Some("alice"), "order-7f3a");
/// let terms = LeaseTerms {
///     duration: std::time::Duration::from_secs(90),
///     if_lost: Release::Uncertain(ExecutionStatus::Lost),
/// };
/// let claim = store.claim(&key, Fingerprint::of("place_order", &serde_json::json!({})), terms).await?;
/// assert!(matches!(claim, Claim::Acquired(_)));
/// # Ok(())
/// # }
/// ```
pub struct PostgresStore {
    shared: Arc<Shared>,
    /// The listener, the sweeper and the publisher of changes: they end with the store.
    tasks: [JoinHandle<()>; 3],
}

/// What the store's calls, its waiters, its sweeper and its publisher share.
struct Shared {
    db: Database,
    waiters: Arc<Waiters>,
    holders: task_holders::Holders,
    /// Resource changes to and from the other replicas.
    feed: Arc<Feed>,
}

impl PostgresStore {
    /// Connects to the database at `url` with the default options: see
    /// [`connect_with`](Self::connect_with).
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PostgresStoreOptions::default()).await
    }

    /// Connects to the database at `url` (a `postgres://` URL, or libpq's `key=value` form),
    /// creates or migrates the store's tables in [`schema`](PostgresStoreOptions::schema), and
    /// starts listening for settled keys and sweeping expired ones. Call it within a tokio
    /// runtime with time enabled: those two run as tasks on it, until the store is dropped.
    ///
    /// Fails with [`StoreError::Unavailable`] if the options are invalid, the server cannot be
    /// reached within [`connect_timeout`](PostgresStoreOptions::connect_timeout), the role may
    /// not create the schema, or the schema is not a store's or has a newer layout than this
    /// code.
    pub async fn connect_with(
        url: &str,
        options: PostgresStoreOptions,
    ) -> Result<Self, StoreError> {
        options.check()?;
        let db = Database::new(url, options)?;
        let schema = db.options.schema.clone();
        let migrated: Result<(), Failure> =
            on_connection!(&db, "creating or migrating the schema", |connection| {
                schema::migrate(&mut connection, &schema)
            });
        migrated.map_err(|failure| {
            StoreError::unavailable(format!(
                "cannot open the store in schema `{schema}` of {}: {failure}",
                db.target()
            ))
        })?;
        let waiters = Arc::new(Waiters::default());
        let (feed, queued) = Feed::new();
        let listened = listener::Listened {
            settled: (schema::channel(&schema), Arc::clone(&waiters)),
            changes: (schema::changes_channel(&schema), Arc::clone(&feed)),
        };
        let listener = listener::spawn(db.config().clone(), listened, db.options.connect_timeout);
        let interval = db.options.sweep_interval;
        let shared = Arc::new(Shared {
            db,
            waiters,
            holders: task_holders::Holders::default(),
            feed,
        });
        let sweeper = sweep::spawn(Arc::downgrade(&shared), interval);
        let publisher = feed::spawn(
            Arc::downgrade(&shared),
            schema::changes_channel(&schema),
            queued,
        );
        Ok(Self {
            shared,
            tasks: [listener, sweeper, publisher],
        })
    }

    /// The store's bounds, timings and schema.
    pub fn options(&self) -> &PostgresStoreOptions {
        &self.shared.db.options
    }

    /// Settles every expired lease and forgets every key and task past its retention now, in
    /// batches, as the background sweep does every
    /// [`sweep_interval`](PostgresStoreOptions::sweep_interval). (`TaskStore::sweep` does the
    /// tasks' part, and counts them.)
    pub async fn sweep(&self) -> Result<(), StoreError> {
        Ok(self.shared.sweep().await?)
    }
}

impl Shared {
    /// Claims, then tasks, then rate-limit buckets full again: each in batches of their own.
    async fn sweep(&self) -> Result<(), Failure> {
        let ttl = millis(self.db.options.ttl);
        loop {
            let settled: usize = on_connection!(&self.db, "sweeping", |connection| {
                sweep::sweep_batch(&mut connection, &self.db.sql, ttl)
            })?;
            if settled < usize::try_from(sweep::BATCH).unwrap_or(usize::MAX) {
                break;
            }
        }
        self.sweep_tasks().await?;
        self.sweep_rate_buckets().await?;
        Ok(())
    }

    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
        room_made: bool,
    ) -> Result<Seen, Failure> {
        on_connection!(&self.db, "claiming", |connection| claims::claim(
            &mut connection,
            &self.db.sql,
            &self.db.options,
            key,
            fingerprint,
            terms,
            room_made,
        ))
    }

    async fn still_held(&self, key: &IdempotencyKey, token: u128) -> Result<bool, Failure> {
        on_connection!(&self.db, "polling a claim", |connection| {
            claims::still_held(&mut connection, &self.db.sql, key, token)
        })
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (open, idle) = self.shared.db.pool_status();
        f.debug_struct("PostgresStore")
            .field("server", &self.shared.db.target())
            .field("options", &self.shared.db.options)
            .field("connections", &open)
            .field("idle", &idle)
            .field("listening", &self.shared.waiters.listening())
            .finish()
    }
}

impl IdempotencyStore for PostgresStore {
    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> Result<Claim, StoreError> {
        let mut seen = self.shared.claim(key, fingerprint, terms, false).await?;
        if let Seen::Crowded = seen {
            // The totals are full: make room the way the sweep does (one batch, in its own
            // transaction), then claim once more; still full is `Full`.
            let ttl = millis(self.shared.db.options.ttl);
            on_connection!(&self.shared.db, "sweeping for room", |connection| {
                sweep::sweep_batch(&mut connection, &self.shared.db.sql, ttl)
            })?;
            seen = self.shared.claim(key, fingerprint, terms, true).await?;
        }
        Ok(match seen {
            Seen::Acquired(lease) => Claim::Acquired(lease),
            Seen::Finished(recorded) => Claim::Finished(recorded),
            Seen::Conflict => Claim::Conflict,
            Seen::Uncertain(status) => Claim::Uncertain(status),
            Seen::Running { token, left } => {
                let settled = self.shared.waiters.subscribe(&tag(key));
                Claim::Running(Box::pin(wait(
                    Arc::clone(&self.shared),
                    key.clone(),
                    token,
                    Instant::now() + left,
                    settled,
                )))
            }
            Seen::Crowded => return Err(StoreError::totals_full()),
        })
    }

    async fn finish(&self, lease: &Lease, recorded: Recorded) -> Result<(), StoreError> {
        let db = &self.shared.db;
        on_connection!(db, "finishing", |connection| claims::finish(
            &mut connection,
            &db.sql,
            &db.options,
            lease,
            &recorded,
        ))?;
        self.shared.waiters.wake(&tag(lease.key()));
        Ok(())
    }

    async fn release(&self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        let db = &self.shared.db;
        on_connection!(db, "releasing", |connection| claims::release(
            &mut connection,
            &db.sql,
            &db.options,
            lease,
            release,
        ))?;
        self.shared.waiters.wake(&tag(lease.key()));
        Ok(())
    }
}

/// The application's records live in the same schema, and a transactional tool's writes commit
/// in the transaction that records its outcome (see `carmy_core::records`, and "Records" in
/// the type's docs).
impl RecordStore for PostgresStore {
    async fn read(&self, key: &RecordKey) -> Result<Versioned, StoreError> {
        let db = &self.shared.db;
        Ok(on_connection!(db, "reading a record", |connection| {
            records::read(&mut connection, &db.sql, key)
        })?)
    }

    async fn list(&self, collection: &str) -> Result<Listing, StoreError> {
        let db = &self.shared.db;
        Ok(on_connection!(db, "listing records", |connection| {
            records::list(&mut connection, &db.sql, collection)
        })?)
    }

    async fn commit(
        &self,
        changes: &Changes,
        outcome: Option<(&Lease, &Recorded)>,
    ) -> Result<Committed, StoreError> {
        let db = &self.shared.db;
        let committed = on_connection!(db, "committing records", |connection| {
            records::commit(&mut connection, &db.sql, &db.options, changes, outcome)
        })?;
        if let (Committed::Done, Some((lease, _))) = (committed, outcome) {
            self.shared.waiters.wake(&tag(lease.key()));
        }
        Ok(committed)
    }

    async fn unclaimed(&self, key: &IdempotencyKey) -> Result<bool, StoreError> {
        let db = &self.shared.db;
        Ok(on_connection!(
            db,
            "looking up a request id",
            |connection| records::unclaimed(&mut connection, &db.sql, key)
        )?)
    }

    async fn commit_unclaimed(
        &self,
        changes: &Changes,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &Recorded,
    ) -> Result<UnclaimedCommit, StoreError> {
        let db = &self.shared.db;
        Ok(on_connection!(db, "committing records", |connection| {
            records::commit_unclaimed(
                &mut connection,
                &db.sql,
                &db.options,
                changes,
                key,
                fingerprint,
                recorded,
            )
        })?)
    }
}

/// Resolves once `token` no longer holds `key`: settled here or announced by the server
/// (`settled` closes), seen settled or taken over by a poll, or at the lease's expiry at the
/// latest. A store that cannot be read ends the wait too; the claim that follows reports it.
async fn wait(
    shared: Arc<Shared>,
    key: IdempotencyKey,
    token: u128,
    deadline: Instant,
    mut settled: watch::Receiver<()>,
) {
    let mut pauses = Pauses::new(deadline, FIRST_POLL);
    while pauses.sleep(settled.changed()).await {
        match shared.still_held(&key, token).await {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
        let longest = if shared.waiters.listening() {
            LONGEST_POLL_LISTENING
        } else {
            LONGEST_POLL
        };
        pauses.double(longest);
    }
}
