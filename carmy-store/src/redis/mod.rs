//! [`RedisStore`]: claims and outcomes, the application's records, and tasks, on a Redis
//! server shared by every replica that connects to it.
//!
//! - `keys`: the key layout and its hash tags;
//! - `lua/` and `scripts`: claim, finish, release and commit, each one atomic script, and
//!   the listing's; `script_calls`: sending any script and reading its reply;
//! - `records`: reads, listings and commits of records (`RecordStore`);
//! - `tasks` and `task_scripts`: tasks (`TaskStore`), each change a read, the record's rule
//!   in Rust, and a compare-and-set script; `holders`: the tasks this store holds, and how
//!   their holders learn of what others wrote;
//! - `redemptions` and `lua/redeem.lua`: single-use tokens (`RedemptionStore`), one script
//!   per redemption;
//! - `rate_limits` and `lua/take_rate.lua`: rate-limit buckets shared by replicas
//!   (`RateLimitStore`), one script per take;
//! - `link`: the connection, replaced when it fails, every call bounded in time;
//! - `waiters`: waking retries, here at once and elsewhere by polling;
//! - `server` and `durability`: what is checked and read of the server at connect.

mod durability;
mod feed;
mod holders;
mod keys;
mod link;
mod options;
mod rate_limits;
mod records;
mod redemptions;
mod script_calls;
mod scripts;
mod server;
mod task_scripts;
mod tasks;
mod waiters;

use std::{fmt, sync::Arc, time::Duration};

use carmy_core::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, LeaseTerms, Recorded, Release,
    StoreError,
};
use tokio::time::Instant;

pub use durability::Durability;
pub use options::RedisStoreOptions;

use feed::Feeding;
use holders::Holders;
use keys::{Keys, Names};
use link::Link;
use rate_limits::TakeRateScript;
use redemptions::RedeemScript;
use scripts::{ClaimArgs, Claimed, Finish, Scripts, Settled};
use task_scripts::TaskScripts;
use waiters::Waiters;

use crate::outcome;

/// An [`IdempotencyStore`] on a Redis server: every replica of a service that connects to the
/// same server (and prefix) shares its claims and outcomes, so a retry that lands on another
/// replica is replayed, or waits for the one running it; its records, which a transactional
/// tool's run commits with its outcome; and its tasks
/// ([`TaskStore`](carmy_core::TaskStore)), which any replica reads, answers and cancels
/// while another runs them.
///
/// What it guarantees:
/// - **Atomic claims.** Each claim, finish, release and commit is one Lua script, which Redis runs
///   with nothing in between: of any number of concurrent claims of a key, from any number of
///   replicas, one is `Acquired`.
/// - **Leases on Redis's clock.** A lease's end is an instant of the server's clock
///   (`TIME`), never a replica's, whose clocks differ. An expired lease is settled by its
///   [`LeaseTerms::if_lost`] whenever a claim looks at the key: uncertain for a write, free
///   again for a read. A replica that dies holding a claim needs nobody to clean up after it.
///   A server whose clock is set back or forward lengthens or shortens the leases (and its
///   own TTLs) alike; a failover moves them to the new primary's clock.
/// - **No claim kept forever.** Every key of a claim has a Redis TTL: a claim held to be
///   kept as uncertain if lost, its lease plus the retention ([`RedisStoreOptions::ttl`]);
///   a claim to forget if lost, its lease (after that there is nothing to keep); a settled
///   key, the retention from its settling; a share, as long as its last member. (Records,
///   the application's data, have none: see below.)
/// - **Bounded, exactly.** A share of keys and bytes per principal and totals across
///   principals, as `MemoryStore`'s but sized for a Redis server ([`RedisStoreOptions`]),
///   failing closed with [`StoreError::Full`]; nobody's kept
///   key is forgotten to make room. The counts stay true although Redis expires keys
///   silently: each principal's keys are a sorted set scored by the instant each key is
///   forgotten, the very instant its TTL ends, so what is counted at any moment is what
///   scores after it, however many keys expired unseen. The byte sum is kept beside the set,
///   in the same scripts, and the members whose time is up are trimmed from it as claims
///   pass; until they are, it can only count too much (never too little), and a bound is
///   only refused after a whole trim, so what is refused is what is really kept. A key
///   deleted by hand is counted until its time would have been up.
/// - **Fails closed.** Whatever goes wrong reaching or using Redis (refused, timed out,
///   `-LOADING` after a restart, `-READONLY` after a failover) fails the call with
///   [`StoreError::Unavailable`], within the connect and response timeouts (2 s each by
///   default): nothing is guessed and nothing waits for Redis. The next call connects afresh,
///   so the same store serves again by itself once Redis is back.
/// - **Waiters woken promptly.** A retry waiting on a running claim (`Claim::Running`) wakes
///   at once when this store settles the key, and within 250 ms when another replica does
///   (it polls, see below), and at the lease's end at the latest.
/// - **Single-use tokens.** It redeems them too
///   ([`RedemptionStore`](carmy_core::RedemptionStore)): one script per redemption, so every
///   replica redeems a token once between them; bounded per principal and in principals as
///   `carmy_core` says, each key with a TTL that ends with its newest record (see
///   `redemptions`).
/// - **Shared rate limits.** It keeps rate-limit buckets too
///   ([`RateLimitStore`](carmy_core::RateLimitStore)): one script per take, on the server's
///   clock (`TIME`), so every replica shares each tool's limit; a bucket's key expires when it
///   is full again (see `rate_limits`).
///
/// What the operator provides:
/// - **Redis 7.0 or later**, standalone (or a primary with replicas); `connect` refuses an
///   older server and Redis Cluster.
/// - **Persistence**, for outcomes to survive Redis: `appendonly yes` and `appendfsync
///   always`. Anything else can lose acknowledged outcomes on a crash, so their retries run
///   again; `connect` reads the settings and logs a warning (see [`Durability`] for what
///   each setting guarantees). Replication is asynchronous: a promoted replica may lack the
///   last writes its primary acknowledged.
/// - **Memory** above the store's byte bounds and the application's records, and no
///   eviction: `maxmemory-policy noeviction` (Redis's default). Every key of a claim has a
///   TTL, so the `volatile-*` policies would evict claims as readily as the `allkeys-*` ones,
///   which evict records too: an evicted outcome is a retry run again, an evicted record is
///   data lost; `connect` warns of any other policy. A server out of memory refuses the
///   scripts that write whole (they are declared with `#!lua`, so Redis checks before running
///   them), and the store fails closed.
/// - **A private network.** The connection is plain TCP (`redis://host:port/db`, a password
///   or ACL user in the URL): no TLS in this version (`rediss://` URLs are refused).
///
/// **Records.** The store also keeps the application's records
/// ([`RecordStore`](carmy_core::records::RecordStore)), so a `transactional` tool's writes
/// commit in the very script that records its outcome:
/// - **One commit, one script.** It checks, in this order, that the lease is still its key's
///   holder ([`StoreError::LeaseLost`] otherwise: a lost lease wins over a conflict), that
///   every record read is still at the version seen and every collection listed at its
///   version ([`Committed::Conflict`](carmy_core::records::Committed::Conflict) otherwise);
///   then takes the next stamp (`INCR` of one counter), writes the records and moves the
///   written collections on to it, and finishes the lease exactly as
///   [`finish`](IdempotencyStore::finish) does (the same outcome-size rule, the same byte
///   counts in the share and the totals). Every check comes before the first write, and
///   nothing else runs in between: applied whole, or not at all.
/// - **Reads of one moment.** A read is one `HGET` (a record's version and value are one
///   field); a listing one script returning the collection's version with its records,
///   ordered by key bytewise, and refused with [`StoreError::Full`] beyond
///   [`MAX_LISTED`](carmy_core::records::MAX_LISTED) records.
/// - **No TTL.** Records are the application's data, kept until it deletes them, and bounded
///   by it: they count in no share, and no bound of the store refuses them. Give Redis the
///   memory they need, and `noeviction` matters all the more: Redis evicts keys without a TTL
///   under the `allkeys-*` policies, and an evicted record is data lost.
/// - **As durable as the outcomes.** An acknowledged commit is in the append-only file before
///   its answer only with `appendonly yes` and `appendfsync always`, which `connect` checks
///   and warns of (see [`Durability`]); under any other setting a crash may lose it, records
///   and outcome together (a replica promoted may lack it too).
/// - **Sent again only when recognisable.** A commit that finishes a lease and whose
///   connection died under it is sent once more, and recognised by its lease's token (it
///   settled the key): it answers `Done`, applied once. A commit without a lease (a call
///   without a request id) has nothing to be recognised by, and sent again after it was
///   applied it would find its own writes and report a conflict, so that its tool would run
///   again: it is never sent twice. A connection that died under it (even one closed while
///   idle, before it was sent) fails it with [`StoreError::Unavailable`], applied or not, as
///   a timeout does.
///
/// **Tasks.** Give the store to the runtime twice, as its claims' store and its task store,
/// and a task started on one replica is read, answered and cancelled from any other:
///
/// ```no_run
/// use std::sync::Arc;
///
/// use carmy_core::Carmy;
/// use carmy_store::{RedisStore, RedisStoreOptions};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = Arc::new(
///     RedisStore::connect_with(
///         "redis://127.0.0.1:6379/0",
///         RedisStoreOptions::default().with_tasks(|tasks| tasks.with_max_per_principal(100)),
///     )
///     .await?,
/// );
/// let runtime = Carmy::new()
///     .store(Arc::clone(&store))
///     .task_store(store)
///     .build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// - **The record's rules are `carmy_core`'s.** A call reads the task with its version
///   (one script: the record, the holder, Redis's clock), applies
///   [`TaskRecord`](carmy_core::TaskRecord)'s rule in Rust, and writes the record back with a
///   compare-and-set script that applies it only if the task is still at that version (and,
///   for the holder's renewals, questions and ending, still held by its lease, running):
///   otherwise it reads again and applies the rule to what it finds. Two calls that read one
///   version never both write, so concurrent answers, cancels and renewals lose no update.
/// - **Leases on Redis's clock**, as claims: a task whose lease ran out is settled as
///   [`TaskEnding::lost`](carmy_core::TaskEnding::lost) by the next call that reads it, or by
///   [`sweep`](carmy_core::TaskStore::sweep), which finds it in an index of running leases;
///   the holder's late calls fail with [`StoreError::LeaseLost`].
/// - **A TTL on every key of a task**: a running task its lease plus its `ttl`, moved on by
///   each renewal; an ended one its `ttl` from its end (for a lost lease, from the lease's
///   end, the TTL it had). A replica that dies leaves nothing that Redis keeps for ever.
/// - **`MemoryTaskStore`'s bounds**, with its defaults ([`RedisStoreOptions::tasks`]),
///   counted in sorted sets of their own as the claims' are, exact although Redis expires
///   tasks silently: a full share refuses new tasks (`Full`), questions and answers that do
///   not fit are refused, and an outcome that does not is kept as a note
///   (`OUTCOME_NOT_KEPT`). Another principal holding a task's id names another key, and
///   finds nothing.
/// - **The holder hears of what others write** (a cancel request, answers) at once when they
///   go through the same store, and within half a second from another replica, whose writes
///   it polls for: one field of each task a holder waits on, twice a second at most (pub/sub
///   would lose what is published while its connection is down, and need a poll anyway).
/// - **Sent again, applied once.** A call that finds its connection dead under it is sent once
///   more on a fresh one, although Redis may have run it and only its answer was lost. A
///   task's write sent again finds the version moved on, so it cannot apply twice, and its
///   own id among the task's last writes, so it answers as applied, and its caller returns
///   what it wrote. A write that timed out fails with [`StoreError::Unavailable`], applied or
///   not.
/// - **Fails closed and is durable** as claims are: every failure
///   [`StoreError::Unavailable`] within the timeouts, tasks kept across a restart with
///   `appendfsync always`. The holder's renewals fail meanwhile, and a task whose holder
///   could not renew for a whole lease is settled as lost once Redis is back.
///
/// What it costs: one round trip per claim, finish, release, commit, read and listing, and one
/// disk sync for each that writes with `appendfsync always`; about a few hundred bytes of
/// Redis memory per kept key beside its outcome, and a few bytes per record beside its key
/// and JSON text; a waiting retry polls one field at most four times a second. A task's read
/// is one round trip, a change two (three when it meets a lease that ran out, one more for
/// each race it loses), a create two (Redis's clock, then the script); each task takes a few
/// hundred bytes beside its record. Scripts run in
/// Redis's single thread: a claim that finds its principal's share (or the totals) at the
/// bound trims all their expired members at once, and other commands wait meanwhile; the
/// routine trim is a small batch. So does a listing, which copies its whole collection (up to
/// [`MAX_LISTED`](carmy_core::records::MAX_LISTED) records) into its answer.
///
/// Redis Cluster: every script declares its keys, and one principal's keys carry one hash
/// tag (`{p:<principal>}`), so the per-principal part would run on a cluster node. The totals
/// across principals (`{totals}`) are one more slot, which a script of another slot cannot
/// touch on a cluster: that, and the cluster client (not built in), are what is missing.
/// Records are not cluster-ready either: each collection has a slot of its own
/// (`{c:<collection>}`), the stamp counter another (`{records}`), and a commit touches them
/// all together with its principal's. Tasks neither: their totals and index of leases are one
/// slot (`{tasks}`), which every write of a task touches with its principal's. Standalone
/// Redis, or a primary with replicas, is what is supported.
///
/// ```no_run
/// use carmy_core::{Claim, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore, LeaseTerms, Release};
/// use carmy_store::{RedisStore, RedisStoreOptions};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = RedisStore::connect_with(
///     "redis://127.0.0.1:6379/0",
///     RedisStoreOptions::default().with_prefix("shop:"),
/// )
/// .await?;
/// let key = IdempotencyKey::new(Some("alice"), "order-7f3a");
/// let terms = LeaseTerms {
///     duration: std::time::Duration::from_secs(90),
///     if_lost: Release::Uncertain(ExecutionStatus::Lost),
/// };
/// let claim = store.claim(&key, Fingerprint::of("place_order", &serde_json::json!({})), terms).await?;
/// assert!(matches!(claim, Claim::Acquired(_)));
/// # Ok::<(), carmy_core::StoreError>(())
/// # }).unwrap();
/// ```
pub struct RedisStore {
    link: Arc<Link>,
    scripts: Scripts,
    task_scripts: TaskScripts,
    redeem_script: RedeemScript,
    take_rate_script: TakeRateScript,
    keys: Keys,
    waiters: Arc<Waiters>,
    holders: Holders,
    options: RedisStoreOptions,
    /// Where the server is, for `Debug` and the log: its address and database, never the URL
    /// (which may hold a password).
    server: String,
    durability: Durability,
    /// Resource changes to and from the other replicas.
    feed: Feeding,
}

impl RedisStore {
    /// Connects to the Redis server at `url` (`redis://[user:password@]host:port/db`) with the
    /// default options.
    ///
    /// Fails with [`StoreError::Unavailable`] if the URL is not one, the server cannot be
    /// reached within the connect timeout, is older than Redis 7.0, or is a cluster. Logs a
    /// warning when its persistence settings could lose acknowledged outcomes.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, RedisStoreOptions::default()).await
    }

    /// [`connect`](Self::connect) with other bounds, timings or key prefix.
    pub async fn connect_with(url: &str, options: RedisStoreOptions) -> Result<Self, StoreError> {
        let keys = Keys::new(&options.prefix)?;
        // The parser's error never repeats the URL, so it cannot leak a password.
        let client = redis::Client::open(url).map_err(|error| {
            StoreError::unavailable(format!("cannot use this Redis URL: {error}"))
        })?;
        let info = client.get_connection_info();
        let server = format!("{}/{}", info.addr(), info.redis_settings().db());
        let subscriber = client.clone();
        let link = Arc::new(Link::new(
            client,
            options.connect_timeout,
            options.response_timeout,
        ));
        let durability = server::inspect(&link).await?;
        let scripts = Scripts::new();
        scripts.load(&link).await.map_err(StoreError::unavailable)?;
        let task_scripts = TaskScripts::new();
        task_scripts
            .load(&link)
            .await
            .map_err(StoreError::unavailable)?;
        let redeem_script = RedeemScript::new();
        redeem_script
            .load(&link)
            .await
            .map_err(StoreError::unavailable)?;
        let take_rate_script = TakeRateScript::new();
        take_rate_script
            .load(&link)
            .await
            .map_err(StoreError::unavailable)?;
        if let Some(warning) = durability.warning() {
            tracing::warn!(%server, prefix = keys.prefix(), "{warning}");
        }
        let feed = Feeding::start(
            &link,
            subscriber,
            format!("{}changes", keys.prefix()),
            options.connect_timeout,
        );
        Ok(Self {
            link,
            scripts,
            task_scripts,
            redeem_script,
            take_rate_script,
            keys,
            waiters: Arc::default(),
            holders: Holders::default(),
            options,
            server,
            durability,
            feed,
        })
    }

    /// The store's bounds, timings and prefix.
    pub fn options(&self) -> &RedisStoreOptions {
        &self.options
    }

    /// What the server's persistence settings promised at connect.
    pub fn durability(&self) -> Durability {
        self.durability
    }
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("server", &self.server)
            .field("options", &self.options)
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

/// What a key counts for before its outcome: its hash (the name and a few fields) and its name
/// again in its principal's share and in the totals, each with a weight.
fn key_bytes(names: &Names) -> usize {
    const OVERHEAD: usize = 256;
    OVERHEAD + 3 * names.request.len()
}

impl IdempotencyStore for RedisStore {
    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> Result<Claim, StoreError> {
        let names = self.keys.of(key);
        let token = uuid::Uuid::new_v4().as_u128();
        let token_text = format!("{token:032x}");
        let if_lost = match terms.if_lost {
            Release::Retry => String::new(),
            Release::Uncertain(status) => {
                outcome::status_text(status).map_err(StoreError::unavailable)?
            }
        };
        // Before the script runs: a settle by this process after it saw the key held must
        // find this subscription (see `waiters`).
        let watch = self.waiters.watch(key);
        let claimed = self
            .scripts
            .claim(
                &self.link,
                &names,
                ClaimArgs {
                    fingerprint: fingerprint.as_bytes(),
                    token: &token_text,
                    lease: terms.duration,
                    if_lost: &if_lost,
                    ttl: self.options.ttl,
                    weight: key_bytes(&names),
                    max_entries_per_principal: self.options.request_ids.max_per_principal,
                    max_bytes_per_principal: self.options.request_ids.max_bytes_per_principal,
                    max_entries: self.options.request_ids.max,
                    max_bytes: self.options.request_ids.max_bytes,
                },
            )
            .await?;
        Ok(match claimed {
            Claimed::Acquired => Claim::Acquired(Lease::new(key.clone(), token)),
            Claimed::Running { token, left } => {
                let deadline = Instant::now()
                    .checked_add(left)
                    .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 60 * 60));
                Claim::Running(Box::pin(waiters::wait(
                    Arc::clone(&self.link),
                    names.request,
                    token,
                    deadline,
                    watch,
                )))
            }
            Claimed::Finished(recorded) => Claim::Finished(recorded),
            Claimed::Uncertain(status) => Claim::Uncertain(status),
            Claimed::Conflict => Claim::Conflict,
            Claimed::Full {
                total: false,
                entries,
                bytes,
            } => return Err(StoreError::share_full(entries, bytes, self.options.ttl)),
            Claimed::Full { total: true, .. } => return Err(StoreError::totals_full()),
        })
    }

    async fn finish(&self, lease: &Lease, recorded: Recorded) -> Result<(), StoreError> {
        let names = self.keys.of(lease.key());
        let outcome = Outcome::of(lease, &recorded)?;
        let settled = self
            .scripts
            .finish(&self.link, &names, &outcome.finish(&self.options))
            .await?;
        self.settled(lease, settled)
    }

    async fn release(&self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        let names = self.keys.of(lease.key());
        let status = match release {
            Release::Retry => String::new(),
            Release::Uncertain(status) => {
                outcome::status_text(status).map_err(StoreError::unavailable)?
            }
        };
        let settled = self
            .scripts
            .release(
                &self.link,
                &names,
                &format!("{:032x}", lease.token()),
                &status,
                self.options.ttl,
            )
            .await?;
        self.settled(lease, settled)
    }
}

/// What finishing a lease sends, for a finish or a commit: the lease's token, and the
/// outcome as stored JSON with the note to keep instead.
struct Outcome {
    token: String,
    text: String,
    note: String,
}

impl Outcome {
    fn of(lease: &Lease, recorded: &Recorded) -> Result<Self, StoreError> {
        let text = outcome::encode(recorded).map_err(StoreError::unavailable)?;
        let note = outcome::encode(&outcome::not_kept(recorded, text.len()))
            .map_err(StoreError::unavailable)?;
        Ok(Self {
            token: format!("{:032x}", lease.token()),
            text,
            note,
        })
    }

    fn finish<'a>(&'a self, options: &RedisStoreOptions) -> Finish<'a> {
        Finish {
            token: &self.token,
            // Too large in any case: not even sent. The script decides whether one that is
            // small enough fits in the share and the totals.
            text: if self.text.len() > options.request_ids.max_outcome_bytes {
                &self.note
            } else {
                &self.text
            },
            note: &self.note,
            ttl: options.ttl,
            max_bytes_per_principal: options.request_ids.max_bytes_per_principal,
            max_bytes: options.request_ids.max_bytes,
        }
    }
}

impl RedisStore {
    fn settled(&self, lease: &Lease, settled: Settled) -> Result<(), StoreError> {
        match settled {
            Settled::Done => {
                self.waiters.wake(lease.key());
                Ok(())
            }
            Settled::Lost => Err(StoreError::LeaseLost),
        }
    }
}
