//! The default store: in this process's memory, bounded by count, bytes and age, with a share
//! per principal.
//!
//! Exactly-once is not an eviction policy. A settled key is kept until it expires (`ttl`, 24 h
//! by default), never forgotten early to make room: a store that forgot a finished write would
//! run its retry a second time. So the bounds are shares: each principal may hold so many keys
//! and bytes; one who fills its share gets `CAPACITY` (retryable) for new claims until its own
//! oldest keys expire, and nobody else notices. The totals across principals are bounded too,
//! and fail closed the same way. Only writes claim keys, and the default bounds are sized for a
//! process's memory; stores on a disk or a server hold far more.

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::Value;
use tokio::{sync::watch, time::Instant};

use super::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, LeaseTerms, Recorded, Release,
    StoreError,
};
use crate::{
    error::{AgentError, ErrorCategory, codes},
    execution::ExecutionStatus,
};

/// Bounds of the in-memory store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryStoreLimits {
    /// Request ids (of writes) one principal may hold at once (default 10,000).
    pub max_entries_per_principal: usize,
    /// Bytes one principal's keys and outcomes may take (default 16 MiB).
    pub max_bytes_per_principal: usize,
    /// Keys across all principals (default 100,000).
    pub max_entries: usize,
    /// Bytes across all principals (default 128 MiB).
    pub max_bytes: usize,
    /// The largest outcome kept for replay (default 1 MiB). A larger one (or one that does not
    /// fit in its principal's share) is kept as a note that the call ran, and retries get
    /// `OUTCOME_NOT_KEPT` instead of running it again.
    pub max_outcome_bytes: usize,
    /// How long a settled key is kept (default 24 hours).
    pub ttl: Duration,
}

impl Default for MemoryStoreLimits {
    fn default() -> Self {
        Self {
            max_entries_per_principal: 10_000,
            max_bytes_per_principal: 16 << 20,
            max_entries: 100_000,
            max_bytes: 128 << 20,
            max_outcome_bytes: 1 << 20,
            ttl: Duration::from_secs(24 * 60 * 60),
        }
    }
}

impl MemoryStoreLimits {
    /// Replaces the bound on keys across principals.
    #[must_use]
    pub fn with_max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = max_entries;
        self
    }

    /// Replaces the bound on keys of one principal.
    #[must_use]
    pub fn with_max_entries_per_principal(mut self, max_entries: usize) -> Self {
        self.max_entries_per_principal = max_entries;
        self
    }

    /// Replaces the bound on bytes across principals.
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Replaces the bound on bytes of one principal.
    #[must_use]
    pub fn with_max_bytes_per_principal(mut self, max_bytes: usize) -> Self {
        self.max_bytes_per_principal = max_bytes;
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
}

/// The default store: in memory, bounded per principal and in total, by count, bytes and age.
/// Claims, outcomes and waiters live and die with the process; share one store (in an `Arc`)
/// between runtimes of one process, or implement [`IdempotencyStore`] over a database to share
/// it across processes.
pub struct MemoryStore {
    limits: MemoryStoreLimits,
    inner: Mutex<Entries>,
    /// The application's records (`RecordStore`), locked after `inner` when both are.
    pub(crate) records: Mutex<crate::records::MemoryRecords>,
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<IdempotencyKey, Entry>,
    /// Each principal's keys, in claim order.
    shares: HashMap<Arc<str>, Share>,
    entries: usize,
    bytes: usize,
    next_seq: u64,
    /// Lease tokens are unique in the store: a counter is enough.
    next_token: u128,
}

/// One principal's keys, oldest first, and what they weigh.
#[derive(Default)]
struct Share {
    order: BTreeMap<u64, IdempotencyKey>,
    bytes: usize,
}

struct Entry {
    seq: u64,
    claimed_at: Instant,
    fingerprint: Fingerprint,
    /// What the entry counts for in its share: the key, and the outcome once kept.
    bytes: usize,
    state: EntryState,
}

enum EntryState {
    Held {
        token: u128,
        expires: Instant,
        if_lost: Release,
        /// Dropped or sent to when the claim is settled: wakes the waiters.
        settled: watch::Sender<()>,
    },
    Finished(Recorded),
    Uncertain(ExecutionStatus),
}

/// What an entry weighs before its outcome: its key, and the maps' bookkeeping.
fn key_bytes(key: &IdempotencyKey) -> usize {
    const OVERHEAD: usize = 256;
    OVERHEAD + key.principal().len() + key.request_id().len()
}

impl MemoryStore {
    /// A store with the given bounds.
    pub fn new(limits: MemoryStoreLimits) -> Self {
        Self {
            limits,
            inner: Mutex::new(Entries::default()),
            records: Mutex::default(),
        }
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the keys and outcomes held are counted for.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves the maps consistent (no invariant spans an
        // await or a call out), so a poisoned lock is still usable.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(MemoryStoreLimits::default())
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("limits", &self.limits)
            .field("len", &self.len())
            .finish()
    }
}

impl Entry {
    /// Settles an expired lease as its terms say; `false` when the key is to be forgotten.
    fn settle_if_lost(&mut self, now: Instant) -> bool {
        match self.state {
            EntryState::Held {
                expires, if_lost, ..
            } if now >= expires => match if_lost {
                Release::Retry => false,
                Release::Uncertain(status) => {
                    // Replacing the state drops the sender, which wakes the waiters.
                    self.state = EntryState::Uncertain(status);
                    true
                }
            },
            _ => true,
        }
    }

    fn is_held(&self) -> bool {
        matches!(self.state, EntryState::Held { .. })
    }

    /// Whether the entry is still kept at `now`: held, or settled within `ttl`.
    fn is_live(&mut self, now: Instant, ttl: Duration) -> bool {
        self.settle_if_lost(now) && (self.is_held() || now.duration_since(self.claimed_at) < ttl)
    }
}

impl Entries {
    fn remove(&mut self, key: &IdempotencyKey) {
        let Some(entry) = self.by_key.remove(key) else {
            return;
        };
        self.entries -= 1;
        self.bytes -= entry.bytes;
        if let Some(share) = self.shares.get_mut(key.principal()) {
            share.order.remove(&entry.seq);
            share.bytes -= entry.bytes;
            if share.order.is_empty() {
                self.shares.remove(key.principal());
            }
        }
    }

    /// Forgets `principal`'s keys that are no longer kept (expired, or lost and free again),
    /// oldest first, up to the first that is.
    fn expire(&mut self, principal: &str, now: Instant, ttl: Duration) {
        loop {
            let Some(oldest) = self
                .shares
                .get(principal)
                .and_then(|share| share.order.first_key_value())
                .map(|(_, key)| key.clone())
            else {
                return;
            };
            let live = self
                .by_key
                .get_mut(&oldest)
                .is_some_and(|entry| entry.is_live(now, ttl));
            if live {
                return;
            }
            self.remove(&oldest);
        }
    }

    /// Whether `key` may be claimed: its principal's share and the totals have room for it once
    /// expired keys are forgotten. Nobody's live key is forgotten to make room.
    fn make_room(
        &mut self,
        key: &IdempotencyKey,
        limits: &MemoryStoreLimits,
        now: Instant,
    ) -> Result<(), StoreError> {
        let bytes = key_bytes(key);
        self.expire(key.principal(), now, limits.ttl);
        let (held, weight) = self
            .shares
            .get(key.principal())
            .map_or((0, 0), |share| (share.order.len(), share.bytes));
        if held >= limits.max_entries_per_principal
            || weight + bytes > limits.max_bytes_per_principal
        {
            return Err(StoreError::share_full(
                held as u64,
                weight as u64,
                limits.ttl,
            ));
        }
        if self.entries >= limits.max_entries || self.bytes + bytes > limits.max_bytes {
            let principals: Vec<Arc<str>> = self.shares.keys().cloned().collect();
            for principal in principals {
                self.expire(&principal, now, limits.ttl);
            }
        }
        if self.entries >= limits.max_entries || self.bytes + bytes > limits.max_bytes {
            return Err(StoreError::totals_full());
        }
        Ok(())
    }

    /// The holder of `lease`'s key, if `lease` is still it.
    fn held_by(&mut self, lease: &Lease) -> Result<&mut Entry, StoreError> {
        match self.by_key.get_mut(lease.key()) {
            Some(entry) if matches!(entry.state, EntryState::Held { token, .. } if token == lease.token()) => {
                Ok(entry)
            }
            _ => Err(StoreError::LeaseLost),
        }
    }

    /// Settles `key`'s entry as `state`, counting `extra` more bytes for it.
    fn settle(&mut self, key: &IdempotencyKey, state: EntryState, extra: usize) {
        if let Some(entry) = self.by_key.get_mut(key) {
            // Replacing the state drops the sender, which wakes the waiters.
            entry.state = state;
            entry.bytes += extra;
            self.bytes += extra;
            if let Some(share) = self.shares.get_mut(key.principal()) {
                share.bytes += extra;
            }
        }
    }
}

impl IdempotencyStore for MemoryStore {
    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> Result<Claim, StoreError> {
        let now = Instant::now();
        let mut entries = self.lock();
        if let Some(entry) = entries.by_key.get_mut(key) {
            if entry.is_live(now, self.limits.ttl) {
                if entry.fingerprint != fingerprint {
                    return Ok(Claim::Conflict);
                }
                return Ok(match &entry.state {
                    EntryState::Finished(recorded) => Claim::Finished(recorded.clone()),
                    EntryState::Uncertain(status) => Claim::Uncertain(*status),
                    EntryState::Held {
                        expires, settled, ..
                    } => {
                        let mut receiver = settled.subscribe();
                        let expires = *expires;
                        Claim::Running(Box::pin(async move {
                            // Settled (a send, or the sender dropped), or the lease ran out.
                            tokio::select! {
                                _ = receiver.changed() => {}
                                () = tokio::time::sleep_until(expires) => {}
                            }
                        }))
                    }
                });
            }
            entries.remove(key);
        }
        entries.make_room(key, &self.limits, now)?;
        let seq = entries.next_seq;
        entries.next_seq += 1;
        let token = entries.next_token;
        entries.next_token += 1;
        let bytes = key_bytes(key);
        entries.entries += 1;
        entries.bytes += bytes;
        let share = entries
            .shares
            .entry(Arc::from(key.principal()))
            .or_default();
        share.order.insert(seq, key.clone());
        share.bytes += bytes;
        entries.by_key.insert(
            key.clone(),
            Entry {
                seq,
                claimed_at: now,
                fingerprint,
                bytes,
                state: EntryState::Held {
                    token,
                    expires: now + terms.duration,
                    if_lost: terms.if_lost,
                    settled: watch::Sender::new(()),
                },
            },
        );
        Ok(Claim::Acquired(Lease::new(key.clone(), token)))
    }

    async fn finish(&self, lease: &Lease, recorded: Recorded) -> Result<(), StoreError> {
        self.finish_then(lease, recorded, || true).map(|_| ())
    }

    async fn release(&self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        let mut entries = self.lock();
        entries.held_by(lease)?;
        match release {
            Release::Uncertain(status) => {
                entries.settle(lease.key(), EntryState::Uncertain(status), 0);
            }
            // Dropping the sender wakes the waiters, whose next claim runs the call anew.
            Release::Retry => entries.remove(lease.key()),
        }
        Ok(())
    }
}

impl MemoryStore {
    /// Finishes `lease` with `recorded` if `first`, run once the lease is known to be its
    /// key's holder and under the same lock, returns `true`: a record commit applies its writes
    /// there, so that they and the outcome happen together or not at all. Returns what `first`
    /// returned.
    pub(crate) fn finish_then(
        &self,
        lease: &Lease,
        recorded: Recorded,
        first: impl FnOnce() -> bool,
    ) -> Result<bool, StoreError> {
        let mut entries = self.lock();
        entries.held_by(lease)?;
        if !first() {
            return Ok(false);
        }
        let key = lease.key();
        let size = outcome_bytes(&recorded);
        let share = entries
            .shares
            .get(key.principal())
            .map_or(0, |share| share.bytes);
        let fits = size <= self.limits.max_outcome_bytes
            && share + size <= self.limits.max_bytes_per_principal
            && entries.bytes + size <= self.limits.max_bytes;
        let (recorded, size) = if fits {
            (recorded, size)
        } else {
            // The call ran: its retries must not run it again, even if its outcome cannot be
            // kept. A short note is kept instead.
            let note = not_kept(recorded, size);
            let size = outcome_bytes(&note);
            (note, size)
        };
        entries.settle(key, EntryState::Finished(recorded), size);
        Ok(true)
    }
}

/// The note kept for an outcome too large to keep: the call ran, under this execution id.
pub(crate) fn not_kept(recorded: Recorded, size: usize) -> Recorded {
    let error = AgentError::new(
        ErrorCategory::Conflict,
        codes::OUTCOME_NOT_KEPT,
        format!(
            "this request id's call ran once (execution {}, {}), but its outcome ({size} bytes) \
             was too large to keep for replay; check the current state before calling again \
             with a new request id",
            recorded.execution_id, recorded.status
        ),
    )
    .with_details(serde_json::json!({
        "execution_id": recorded.execution_id.as_str(),
        "status": recorded.status,
        "bytes": size,
    }));
    Recorded::new(recorded.execution_id, recorded.status, Err(error))
}

/// About what `recorded` takes in memory.
pub(crate) fn outcome_bytes(recorded: &Recorded) -> usize {
    NODE + recorded.execution_id.as_str().len()
        + match &recorded.result {
            Ok(output) => value_bytes(output),
            Err(error) => {
                error.code().len()
                    + error.message().len()
                    + error.details().map_or(0, value_bytes)
                    + error.next_tool().map_or(0, str::len)
            }
        }
}

const NODE: usize = 16;

/// About what `node` takes in memory: its strings, and a word or so per node.
pub(crate) fn value_bytes(node: &Value) -> usize {
    NODE + match node {
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(value_bytes).sum(),
        Value::Object(members) => members
            .iter()
            .map(|(name, member)| name.len() + value_bytes(member))
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::{ExecutionId, ExecutionStatus};
    use serde_json::json;

    fn recorded(id: &str) -> Recorded {
        Recorded::new(
            ExecutionId::from(id),
            ExecutionStatus::Succeeded,
            Ok(json!({ "ok": true })),
        )
    }

    const TERMS: LeaseTerms = LeaseTerms {
        duration: Duration::from_secs(60),
        if_lost: Release::Uncertain(ExecutionStatus::Lost),
    };

    fn fp() -> Fingerprint {
        Fingerprint::of("t", &json!({}))
    }

    async fn acquire(store: &MemoryStore, key: &IdempotencyKey, terms: LeaseTerms) -> Lease {
        match store.claim(key, fp(), terms).await {
            Ok(Claim::Acquired(lease)) => lease,
            other => panic!("expected to acquire {key:?}: {other:?}"),
        }
    }

    #[tokio::test]
    async fn claim_finish_replay_conflict() {
        let store = MemoryStore::default();
        let key = IdempotencyKey::new(Some("alice"), "r1");
        let lease = acquire(&store, &key, TERMS).await;
        assert!(matches!(
            store.claim(&key, fp(), TERMS).await,
            Ok(Claim::Running(_))
        ));
        store.finish(&lease, recorded("exec_1")).await.unwrap();
        match store.claim(&key, fp(), TERMS).await {
            Ok(Claim::Finished(r)) => assert_eq!(r.execution_id.as_str(), "exec_1"),
            other => panic!("{other:?}"),
        }
        let other = Fingerprint::of("t", &json!({ "x": 1 }));
        assert!(matches!(
            store.claim(&key, other, TERMS).await,
            Ok(Claim::Conflict)
        ));
        // Another principal's key is another key.
        let bob = IdempotencyKey::new(Some("bob"), "r1");
        assert!(matches!(
            store.claim(&bob, other, TERMS).await,
            Ok(Claim::Acquired(_))
        ));
    }

    #[tokio::test]
    async fn release_forgets_or_marks_uncertain() {
        let store = MemoryStore::default();
        let key = IdempotencyKey::new(None, "released");
        let lease = acquire(&store, &key, TERMS).await;
        store.release(&lease, Release::Retry).await.unwrap();
        acquire(&store, &key, TERMS).await;

        let key = IdempotencyKey::new(None, "uncertain");
        let lease = acquire(&store, &key, TERMS).await;
        store
            .release(&lease, Release::Uncertain(ExecutionStatus::TimedOut))
            .await
            .unwrap();
        assert!(matches!(
            store.claim(&key, fp(), TERMS).await,
            Ok(Claim::Uncertain(ExecutionStatus::TimedOut))
        ));
    }

    #[tokio::test]
    async fn a_settled_lease_cannot_settle_again() {
        let store = MemoryStore::default();
        let key = IdempotencyKey::new(None, "k");
        let lease = acquire(&store, &key, TERMS).await;
        store.finish(&lease, recorded("exec_1")).await.unwrap();
        assert!(matches!(
            store.finish(&lease, recorded("exec_2")).await,
            Err(StoreError::LeaseLost)
        ));
        assert!(matches!(
            store.release(&lease, Release::Retry).await,
            Err(StoreError::LeaseLost)
        ));
        match store.claim(&key, fp(), TERMS).await {
            Ok(Claim::Finished(r)) => assert_eq!(r.execution_id.as_str(), "exec_1"),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_lost_lease_is_settled_by_its_terms_and_wakes_the_waiters() {
        let store = MemoryStore::default();
        let short = |if_lost| LeaseTerms {
            duration: Duration::from_secs(5),
            if_lost,
        };
        // A write whose holder vanished: uncertain once the lease runs out.
        let write = IdempotencyKey::new(None, "write");
        let lost = acquire(
            &store,
            &write,
            short(Release::Uncertain(ExecutionStatus::Lost)),
        )
        .await;
        let Ok(Claim::Running(waiter)) = store.claim(&write, fp(), TERMS).await else {
            panic!("expected a running claim");
        };
        waiter.await; // resolves when the lease runs out (time is paused: instantly)
        assert!(matches!(
            store.claim(&write, fp(), TERMS).await,
            Ok(Claim::Uncertain(ExecutionStatus::Lost))
        ));
        assert!(matches!(
            store.finish(&lost, recorded("late")).await,
            Err(StoreError::LeaseLost)
        ));
        // A read: claimable again.
        let read = IdempotencyKey::new(None, "read");
        let lost = acquire(&store, &read, short(Release::Retry)).await;
        tokio::time::advance(Duration::from_secs(6)).await;
        let again = acquire(&store, &read, TERMS).await;
        assert_ne!(lost, again);
        assert!(matches!(
            store.release(&lost, Release::Retry).await,
            Err(StoreError::LeaseLost)
        ));
        store.finish(&again, recorded("exec_r")).await.unwrap();
    }

    fn of(principal: &str, id: &str) -> IdempotencyKey {
        IdempotencyKey::new(Some(principal), id)
    }

    #[tokio::test]
    async fn a_full_share_fails_closed_and_forgets_nothing() {
        let store =
            MemoryStore::new(MemoryStoreLimits::default().with_max_entries_per_principal(2));
        let a = acquire(&store, &of("alice", "a"), TERMS).await;
        store.finish(&a, recorded("exec_a")).await.unwrap();
        acquire(&store, &of("alice", "b"), TERMS).await; // held
        assert!(matches!(
            store.claim(&of("alice", "c"), fp(), TERMS).await,
            Err(StoreError::Full(_))
        ));
        // Neither the finished key nor the held one was forgotten to make room.
        assert!(matches!(
            store.claim(&of("alice", "a"), fp(), TERMS).await,
            Ok(Claim::Finished(_))
        ));
        assert!(matches!(
            store.claim(&of("alice", "b"), fp(), TERMS).await,
            Ok(Claim::Running(_))
        ));
    }

    #[tokio::test]
    async fn one_principals_flood_leaves_anothers_keys_alone() {
        let store = MemoryStore::new(
            MemoryStoreLimits::default()
                .with_max_entries_per_principal(100)
                .with_max_entries(150),
        );
        let mine = acquire(&store, &of("alice", "order-1"), TERMS).await;
        store.finish(&mine, recorded("exec_mine")).await.unwrap();
        let mut refused = 0;
        for n in 0..1_000 {
            match store
                .claim(&of("mallory", &format!("r-{n}")), fp(), TERMS)
                .await
            {
                Ok(Claim::Acquired(lease)) => store.finish(&lease, recorded("x")).await.unwrap(),
                Err(StoreError::Full(_)) => refused += 1,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(refused, 900, "mallory's share is 100 keys");
        match store.claim(&of("alice", "order-1"), fp(), TERMS).await {
            Ok(Claim::Finished(r)) => assert_eq!(r.execution_id.as_str(), "exec_mine"),
            other => panic!("alice's finished write was forgotten: {other:?}"),
        }
        // Alice still has her share, and the totals fail closed for everyone past them.
        for n in 0..49 {
            acquire(&store, &of("alice", &format!("more-{n}")), TERMS).await;
        }
        assert!(matches!(
            store.claim(&of("bob", "first"), fp(), TERMS).await,
            Err(StoreError::Full(_))
        ));
        assert_eq!(store.len(), 150);
    }

    #[tokio::test(start_paused = true)]
    async fn keys_make_room_as_they_expire() {
        let store = MemoryStore::new(
            MemoryStoreLimits::default()
                .with_max_entries_per_principal(1)
                .with_ttl(Duration::from_secs(60)),
        );
        let a = acquire(&store, &of("alice", "a"), TERMS).await;
        store.finish(&a, recorded("exec_a")).await.unwrap();
        assert!(store.claim(&of("alice", "b"), fp(), TERMS).await.is_err());
        tokio::time::advance(Duration::from_secs(61)).await;
        acquire(&store, &of("alice", "b"), TERMS).await;
        assert_eq!(store.len(), 1);
    }

    #[tokio::test]
    async fn bytes_are_bounded_and_a_large_outcome_is_kept_as_a_note() {
        let store = MemoryStore::new(
            MemoryStoreLimits::default()
                .with_max_outcome_bytes(64 << 10)
                .with_max_bytes_per_principal(1 << 20),
        );
        let big = Recorded::new(
            ExecutionId::from("exec_big"),
            ExecutionStatus::Succeeded,
            Ok(json!({ "report": "x".repeat(1 << 20) })),
        );
        let key = of("alice", "report");
        let lease = acquire(&store, &key, TERMS).await;
        store.finish(&lease, big).await.unwrap();
        assert!(store.bytes() < 4 << 10, "{} bytes kept", store.bytes());
        let Ok(Claim::Finished(note)) = store.claim(&key, fp(), TERMS).await else {
            panic!("the call ran: its retry must not run it again");
        };
        assert_eq!(note.execution_id.as_str(), "exec_big");
        assert_eq!(note.status, ExecutionStatus::Succeeded);
        let error = note.result.unwrap_err();
        assert_eq!(error.code(), "OUTCOME_NOT_KEPT");
        assert_eq!(error.details().unwrap()["execution_id"], "exec_big");
        // Outcomes that fit are kept until the share is full, then noted.
        let mut kept = 0;
        for n in 0..40 {
            let lease = acquire(&store, &of("alice", &format!("r-{n}")), TERMS).await;
            let outcome = Recorded::new(
                ExecutionId::from("e"),
                ExecutionStatus::Succeeded,
                Ok(json!("y".repeat(60 << 10))),
            );
            store.finish(&lease, outcome).await.unwrap();
            if let Ok(Claim::Finished(r)) = store
                .claim(&of("alice", &format!("r-{n}")), fp(), TERMS)
                .await
                && r.result.is_ok()
            {
                kept += 1;
            }
        }
        assert!(
            (10..17).contains(&kept),
            "{kept} outcomes of 60 KiB kept in 1 MiB"
        );
        assert!(store.bytes() <= 1 << 20);
    }

    #[tokio::test]
    async fn expired_keys_are_forgotten() {
        let store = MemoryStore::new(MemoryStoreLimits::default().with_ttl(Duration::ZERO));
        let key = IdempotencyKey::new(None, "old");
        let lease = acquire(&store, &key, TERMS).await;
        store.finish(&lease, recorded("exec_old")).await.unwrap();
        acquire(&store, &key, TERMS).await;
    }
}
