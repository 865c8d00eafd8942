//! The default store: in this process's memory, bounded by count and age.

use std::{
    collections::{HashMap, VecDeque},
    fmt,
    sync::Mutex,
    time::Duration,
};

use tokio::{sync::watch, time::Instant};

use super::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, LeaseTerms, Recorded, Release,
    StoreError,
};

/// Bounds of the in-memory store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryStoreLimits {
    /// Most keys kept at once (default 10,000). Past it the oldest settled keys are forgotten;
    /// when every key is still held by a live claim, claims fail with `CAPACITY`.
    pub max_entries: usize,
    /// How long a settled key is kept (default 24 hours).
    pub ttl: Duration,
}

impl Default for MemoryStoreLimits {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            ttl: Duration::from_secs(24 * 60 * 60),
        }
    }
}

impl MemoryStoreLimits {
    /// Replaces the bound on keys.
    #[must_use]
    pub fn with_max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = max_entries;
        self
    }

    /// Replaces how long settled keys are kept.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
}

/// The default store: in memory, bounded by count and age. Claims, outcomes and waiters live
/// and die with the process; share one store (in an `Arc`) between runtimes of one process,
/// or implement [`IdempotencyStore`] over a database to share it across processes.
pub struct MemoryStore {
    limits: MemoryStoreLimits,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<IdempotencyKey, Entry>,
    /// Keys in claim order, with the sequence number that makes stale queue slots detectable.
    order: VecDeque<(u64, IdempotencyKey)>,
    next_seq: u64,
    /// Lease tokens are unique in the store: a counter is enough.
    next_token: u128,
}

struct Entry {
    seq: u64,
    claimed_at: Instant,
    fingerprint: Fingerprint,
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
    Uncertain(crate::execution::ExecutionStatus),
}

impl MemoryStore {
    /// A store with the given bounds.
    pub fn new(limits: MemoryStoreLimits) -> Self {
        Self {
            limits,
            inner: Mutex::new(Entries::default()),
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves the maps consistent (no invariant spans two
        // statements), so a poisoned lock is still usable.
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
}

impl Entries {
    /// Forgets lost claims, expired keys, then the oldest settled ones until there is room for
    /// one more. Keys held by a live claim are never forgotten.
    fn make_room(&mut self, limits: &MemoryStoreLimits, now: Instant) -> bool {
        let mut requeued = 0;
        while let Some((seq, key)) = self.order.pop_front() {
            let len = self.by_key.len();
            let Some(entry) = self.by_key.get_mut(&key) else {
                continue; // removed already
            };
            if entry.seq != seq {
                continue; // a stale slot: the key was claimed again later
            }
            if !entry.settle_if_lost(now) {
                self.by_key.remove(&key);
                continue;
            }
            let expired = now.duration_since(entry.claimed_at) >= limits.ttl;
            let full = len >= limits.max_entries;
            if !expired && !full {
                self.order.push_front((seq, key));
                return true;
            }
            if entry.is_held() {
                // Live: keep it, and look past it.
                self.order.push_back((seq, key));
                requeued += 1;
                if requeued > len {
                    break;
                }
                continue;
            }
            self.by_key.remove(&key);
        }
        self.by_key.len() < limits.max_entries
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
            let kept = entry.settle_if_lost(now)
                && (entry.is_held() || now.duration_since(entry.claimed_at) < self.limits.ttl);
            if kept {
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
            entries.by_key.remove(key);
        }
        if !entries.make_room(&self.limits, now) {
            return Err(StoreError::Full(
                "too many requests with a request id are running; retry later".into(),
            ));
        }
        let seq = entries.next_seq;
        entries.next_seq += 1;
        let token = entries.next_token;
        entries.next_token += 1;
        entries.order.push_back((seq, key.clone()));
        entries.by_key.insert(
            key.clone(),
            Entry {
                seq,
                claimed_at: now,
                fingerprint,
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
        let mut entries = self.lock();
        let entry = entries.held_by(lease)?;
        // Replacing the state drops the sender, which wakes the waiters.
        entry.state = EntryState::Finished(recorded);
        Ok(())
    }

    async fn release(&self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        let mut entries = self.lock();
        let entry = entries.held_by(lease)?;
        match release {
            Release::Uncertain(status) => entry.state = EntryState::Uncertain(status),
            // Dropping the sender wakes the waiters, whose next claim runs the call anew.
            Release::Retry => {
                entries.by_key.remove(lease.key());
            }
        }
        Ok(())
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

    #[tokio::test]
    async fn bounded_store_forgets_settled_keys_and_fails_closed_on_held_ones() {
        let store = MemoryStore::new(
            MemoryStoreLimits::default()
                .with_max_entries(2)
                .with_ttl(Duration::from_secs(60)),
        );
        let k = |id: &str| IdempotencyKey::new(None, id);
        let a = acquire(&store, &k("a"), TERMS).await;
        store.finish(&a, recorded("exec_a")).await.unwrap();
        acquire(&store, &k("b"), TERMS).await; // held
        // Full: "a" (finished, oldest) makes room for "c".
        acquire(&store, &k("c"), TERMS).await;
        assert_eq!(store.len(), 2);
        assert!(matches!(
            store.claim(&k("a"), fp(), TERMS).await,
            Err(StoreError::Full(_))
        ));
        // Both live claims are still there.
        assert!(matches!(
            store.claim(&k("b"), fp(), TERMS).await,
            Ok(Claim::Running(_))
        ));
        assert!(matches!(
            store.claim(&k("c"), fp(), TERMS).await,
            Ok(Claim::Running(_))
        ));
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
