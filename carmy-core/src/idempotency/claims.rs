//! The claims table of the in-memory store: each key's claim, outcome and waiters, bounded by
//! count, bytes and age, with a share per principal. It knows nothing of where it is kept: the
//! store that locks it (`MemoryStore`) sits above, beside the records it commits with.
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
    sync::Arc,
    time::Duration,
};

use tokio::{sync::watch, time::Instant};

use super::{
    Claim, Fingerprint, IdempotencyKey, Lease, LeaseTerms, Recorded, Release, StoreError,
    weight::{not_kept, outcome_bytes},
};
use crate::{execution::ExecutionStatus, quotas::Quotas};

/// Bounds of the in-memory store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryStoreLimits {
    /// The request ids (of writes) kept, with their outcomes: 10,000 and 16 MiB per principal,
    /// 100,000 and 128 MiB in all, outcomes of at most 1 MiB kept for replay (by default).
    pub request_ids: Quotas,
    /// How long a settled key is kept (default 24 hours).
    pub ttl: Duration,
}

impl Default for MemoryStoreLimits {
    fn default() -> Self {
        Self {
            request_ids: Quotas::new(10_000, 16 << 20, 100_000, 128 << 20, 1 << 20),
            ttl: Duration::from_secs(24 * 60 * 60),
        }
    }
}

impl MemoryStoreLimits {
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
}

/// The claims table: each key's entry, with each principal's share, within `limits`.
pub(crate) struct Claims {
    limits: MemoryStoreLimits,
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

impl Claims {
    /// An empty table bounded by `limits`.
    pub(crate) fn new(limits: MemoryStoreLimits) -> Self {
        Self {
            limits,
            by_key: HashMap::new(),
            shares: HashMap::new(),
            entries: 0,
            bytes: 0,
            next_seq: 0,
            next_token: 0,
        }
    }

    pub(crate) fn limits(&self) -> &MemoryStoreLimits {
        &self.limits
    }

    /// Number of keys held.
    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Bytes the keys and outcomes held are counted for.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Claims `key` at `now`: see [`IdempotencyStore::claim`](super::IdempotencyStore::claim).
    pub(crate) fn claim(
        &mut self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
        now: Instant,
    ) -> Result<Claim, StoreError> {
        let limits = self.limits;
        if let Some(entry) = self.by_key.get_mut(key) {
            if entry.is_live(now, limits.ttl) {
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
            self.remove(key);
        }
        self.make_room(key, now)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        let token = self.next_token;
        self.next_token += 1;
        let bytes = key_bytes(key);
        self.entries += 1;
        self.bytes += bytes;
        let share = self.shares.entry(Arc::from(key.principal())).or_default();
        share.order.insert(seq, key.clone());
        share.bytes += bytes;
        self.by_key.insert(
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

    /// Whether `key` is unknown at `now`: never claimed, or no longer kept.
    pub(crate) fn unclaimed(&mut self, key: &IdempotencyKey, now: Instant) -> bool {
        let ttl = self.limits.ttl;
        self.by_key
            .get_mut(key)
            .is_none_or(|entry| !entry.is_live(now, ttl))
    }

    /// Whether `lease` still holds its key; [`StoreError::LeaseLost`] if not.
    pub(crate) fn check(&mut self, lease: &Lease) -> Result<(), StoreError> {
        self.held_by(lease).map(|_| ())
    }

    /// Finishes `lease` with `recorded`, or with a note that the call ran when the outcome does
    /// not fit.
    pub(crate) fn finish(&mut self, lease: &Lease, recorded: Recorded) -> Result<(), StoreError> {
        self.held_by(lease)?;
        let key = lease.key();
        let size = outcome_bytes(&recorded);
        let share = self
            .shares
            .get(key.principal())
            .map_or(0, |share| share.bytes);
        let fits = size <= self.limits.request_ids.max_outcome_bytes
            && share + size <= self.limits.request_ids.max_bytes_per_principal
            && self.bytes + size <= self.limits.request_ids.max_bytes;
        let (recorded, size) = if fits {
            (recorded, size)
        } else {
            // The call ran: its retries must not run it again, even if its outcome cannot be
            // kept. A short note is kept instead.
            let note = not_kept(recorded, size);
            let size = outcome_bytes(&note);
            (note, size)
        };
        self.settle(key, EntryState::Finished(recorded), size);
        Ok(())
    }

    /// Releases `lease` as `release` says.
    pub(crate) fn release(&mut self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        self.held_by(lease)?;
        match release {
            Release::Uncertain(status) => {
                self.settle(lease.key(), EntryState::Uncertain(status), 0);
            }
            // Dropping the sender wakes the waiters, whose next claim runs the call anew.
            Release::Retry => self.remove(lease.key()),
        }
        Ok(())
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

impl Claims {
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
    fn make_room(&mut self, key: &IdempotencyKey, now: Instant) -> Result<(), StoreError> {
        let (ttl, quotas) = (self.limits.ttl, self.limits.request_ids);
        let bytes = key_bytes(key);
        self.expire(key.principal(), now, ttl);
        let (held, weight) = self
            .shares
            .get(key.principal())
            .map_or((0, 0), |share| (share.order.len(), share.bytes));
        if held >= quotas.max_per_principal || weight + bytes > quotas.max_bytes_per_principal {
            return Err(StoreError::share_full(held as u64, weight as u64, ttl));
        }
        if self.entries >= quotas.max || self.bytes + bytes > quotas.max_bytes {
            let principals: Vec<Arc<str>> = self.shares.keys().cloned().collect();
            for principal in principals {
                self.expire(&principal, now, ttl);
            }
        }
        if self.entries >= quotas.max || self.bytes + bytes > quotas.max_bytes {
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
