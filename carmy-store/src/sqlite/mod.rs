//! [`SqliteStore`]: claims and outcomes, the application's records and tasks in one local
//! SQLite file.

mod db;
mod failure;
mod file;
mod integers;
mod options;
mod records;
mod redemptions;
mod schema;
mod task_holders;
mod task_poll;
mod task_rows;
mod tasks;
mod worker;

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use carmy_core::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, LeaseTerms, Recorded, Release,
    StoreError,
    records::{Changes, Committed, Listing, RecordKey, RecordStore, UnclaimedCommit, Versioned},
};
use tokio::{sync::watch, time::Instant};

pub use options::SqliteStoreOptions;

use db::Seen;
use task_holders::TaskHolders;
use worker::Worker;

use crate::claim_wait::Pauses;

/// The first pause of a waiter polling for another process's claim; it doubles up to
/// [`LONGEST_POLL`], and never goes past the lease's expiry. The poll for other processes'
/// task writes backs off the same way (see `tasks`).
const FIRST_POLL: Duration = Duration::from_millis(10);
const LONGEST_POLL: Duration = Duration::from_millis(250);

/// An [`IdempotencyStore`] in one local SQLite file: claims, leases and outcomes survive a
/// restart (or a `kill -9`), and every process that opens the file shares them.
///
/// - Durable: write-ahead logging with `synchronous = FULL`, so `finish` returns once its
///   outcome is on disk; a crash keeps every committed record.
/// - Atomic: each claim is one atomic step of a `BEGIN IMMEDIATE` transaction, so of any
///   number of claims of a key, in any number of processes, one is `Acquired`.
/// - Group commit: the calls that reach the store's thread while it commits share its next
///   commit (each a savepoint of one transaction), and each is answered once that commit is on
///   disk: many calls per disk sync under load, none waiting for company when alone.
/// - Nothing held forever: a lease is its expiry instant in the row; once it passes, the key
///   settles as the claim's [`LeaseTerms::if_lost`] says, whoever looks next (or the sweep).
/// - Bounded: shares per principal and totals, as `MemoryStore`'s but sized for a disk
///   ([`SqliteStoreOptions`]), failing closed with [`StoreError::Full`]; settled keys are
///   forgotten after [`SqliteStoreOptions::ttl`].
/// - Off the executor: one thread of its own owns the connection (see [`open`](Self::open)).
///
/// A waiter (`Claim::Running`) wakes as soon as this process settles the key; for another
/// process's claim it polls the file, every 10 ms at first and then at most every 250 ms,
/// until the key is settled or the lease runs out.
///
/// It is a [`TaskStore`](carmy_core::TaskStore) too: tasks live in the same file, bounded as
/// `MemoryTaskStore` is, and every process that opens the file reads, answers and cancels the
/// tasks the others run. A holder waiting in `changed` wakes at once when this store writes
/// for its task (a cancel, answers); while it holds tasks, its thread looks at the file for
/// other processes' writes as often as a claim's waiter does (a pragma each time, however many
/// tasks). A task whose process was killed fails (`EXECUTION_LOST`) once its lease runs out.
///
/// Leases use the wall clock, the one clock that processes sharing the file agree on: a clock
/// set back makes leases last longer, one set forward shortens them.
///
/// ```
/// use carmy_core::{Claim, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore, LeaseTerms, Release};
/// use carmy_store::SqliteStore;
/// # let dir = std::env::temp_dir().join(format!("carmy-store-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let store = SqliteStore::open(dir.join("store.sqlite"))?;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let key = IdempotencyKey::new(Some("alice"), "order-7f3a");
/// let terms = LeaseTerms {
///     duration: std::time::Duration::from_secs(90),
///     if_lost: Release::Uncertain(ExecutionStatus::Lost),
/// };
/// let claim = store.claim(&key, Fingerprint::of("place_order", &serde_json::json!({})), terms).await?;
/// assert!(matches!(claim, Claim::Acquired(_)));
/// # Ok::<(), carmy_core::StoreError>(())
/// # }).unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), carmy_core::StoreError>(())
/// ```
pub struct SqliteStore {
    worker: Worker,
    path: PathBuf,
    options: SqliteStoreOptions,
    /// The tasks held by this store's holders, which `changed` subscribes to.
    holders: Arc<TaskHolders>,
}

impl SqliteStore {
    /// Opens (or creates) the store in the file at `path`, with the default options.
    ///
    /// Blocks while the file is opened and its layout checked, waiting up to the busy timeout
    /// if another process is writing: call it before serving, or from `spawn_blocking`.
    /// Fails with [`StoreError::Unavailable`] if the file cannot be opened, is not a store, or
    /// was written by a newer layout.
    ///
    /// A file it creates is readable and writable by its owner alone (mode `0600` on Unix,
    /// whatever the umask), and so are the files SQLite keeps beside it (`-wal`, `-shm`,
    /// `-journal`): they hold every call's arguments and outcomes. A file that exists keeps
    /// its permissions.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteStoreOptions::default())
    }

    /// [`open`](Self::open) with other bounds and timings.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: SqliteStoreOptions,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let holders = Arc::new(TaskHolders::default());
        let worker = Worker::start(path.clone(), options, Arc::clone(&holders))?;
        Ok(Self {
            worker,
            path,
            options,
            holders,
        })
    }

    /// The file the store is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's bounds and timings.
    pub fn options(&self) -> &SqliteStoreOptions {
        &self.options
    }

    /// Settles every expired lease and forgets every key and task past its retention now, as
    /// the background sweep does every [`SqliteStoreOptions::sweep_interval`].
    pub async fn sweep(&self) -> Result<(), StoreError> {
        self.worker.run(|db| db.sweep()).await
    }
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("options", &self.options)
            .finish()
    }
}

impl IdempotencyStore for SqliteStore {
    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> Result<Claim, StoreError> {
        let owned = key.clone();
        let seen = self
            .worker
            .run_grouped(move |db| db.claim(&owned, fingerprint, terms))
            .await?;
        Ok(match seen {
            Seen::Acquired(lease) => Claim::Acquired(lease),
            Seen::Finished(recorded) => Claim::Finished(recorded),
            Seen::Conflict => Claim::Conflict,
            Seen::Uncertain(status) => Claim::Uncertain(status),
            Seen::Running {
                token,
                expires_at,
                settled,
            } => {
                let left =
                    u64::try_from(expires_at.saturating_sub(integers::now_ms())).unwrap_or(0);
                let deadline = Instant::now() + Duration::from_millis(left);
                Claim::Running(Box::pin(wait(
                    self.worker.clone(),
                    key.clone(),
                    token,
                    deadline,
                    settled,
                )))
            }
        })
    }

    async fn finish(&self, lease: &Lease, recorded: Recorded) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.worker
            .run_grouped(move |db| db.finish(&lease, &recorded))
            .await
    }

    async fn release(&self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.worker
            .run_grouped(move |db| db.release(&lease, release))
            .await
    }
}

/// The application's records live in the same file, and a transactional tool's writes commit
/// in the transaction that records its outcome (see `carmy_core::records`).
impl RecordStore for SqliteStore {
    async fn read(&self, key: &RecordKey) -> Result<Versioned, StoreError> {
        let key = key.clone();
        self.worker
            .run_grouped(move |db| db.read_record(&key))
            .await
    }

    async fn list(&self, collection: &str) -> Result<Listing, StoreError> {
        let collection = collection.to_owned();
        self.worker
            .run_grouped(move |db| db.list_records(&collection))
            .await
    }

    async fn commit(
        &self,
        changes: &Changes,
        outcome: Option<(&Lease, &Recorded)>,
    ) -> Result<Committed, StoreError> {
        let changes = changes.clone();
        let outcome = outcome.map(|(lease, recorded)| (lease.clone(), recorded.clone()));
        self.worker
            .run_grouped(move |db| {
                let outcome = outcome.as_ref().map(|(lease, recorded)| (lease, recorded));
                db.commit_records(&changes, outcome)
            })
            .await
    }

    async fn unclaimed(&self, key: &IdempotencyKey) -> Result<bool, StoreError> {
        let key = key.clone();
        self.worker.run_grouped(move |db| db.unclaimed(&key)).await
    }

    async fn commit_unclaimed(
        &self,
        changes: &Changes,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &Recorded,
    ) -> Result<UnclaimedCommit, StoreError> {
        let (changes, key, recorded) = (changes.clone(), key.clone(), recorded.clone());
        self.worker
            .run_grouped(move |db| db.commit_unclaimed(&changes, &key, fingerprint, &recorded))
            .await
    }
}

/// Resolves once `token` no longer holds `key`: settled here (`settled` closes), settled or
/// taken over elsewhere (a poll sees it), or at the lease's expiry at the latest. A store that
/// cannot be read ends the wait too; the claim that follows reports it.
async fn wait(
    worker: Worker,
    key: IdempotencyKey,
    token: u128,
    deadline: Instant,
    mut settled: watch::Receiver<()>,
) {
    let mut pauses = Pauses::new(deadline, FIRST_POLL);
    while pauses.sleep(settled.changed()).await {
        let polled = key.clone();
        match worker
            .run_grouped(move |db| db.still_held(&polled, token))
            .await
        {
            Ok(true) => pauses.double(LONGEST_POLL),
            Ok(false) | Err(_) => return,
        }
    }
}
