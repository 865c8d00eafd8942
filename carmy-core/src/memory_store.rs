//! [`MemoryStore`]: the default store, keeping claims and the application's records in this
//! process's memory. It stands above both `idempotency` and `records` because it is both an
//! [`IdempotencyStore`] and a [`RecordStore`]: the two tables below it know nothing of each
//! other, and this is where a commit's writes and its outcome become one step.

use std::{fmt, sync::Mutex, time::Duration};

use tokio::time::Instant;

use crate::{
    idempotency::{
        Claim, Claims, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, LeaseTerms,
        MemoryStoreLimits, Recorded, Release, StoreError,
    },
    records::{
        Changes, Committed, Listing, MemoryRecords, RecordKey, RecordStore, UnclaimedCommit,
        Versioned,
    },
    sync::lock,
};

/// The default store: in memory, bounded per principal and in total, by count, bytes and age.
/// Claims, outcomes and waiters live and die with the process; share one store (in an `Arc`)
/// between runtimes of one process, or implement [`IdempotencyStore`] over a database to share
/// it across processes.
pub struct MemoryStore {
    claims: Mutex<Claims>,
    /// The application's records (`RecordStore`), locked after `claims` when both are.
    records: Mutex<MemoryRecords>,
}

impl MemoryStore {
    /// A store with the given bounds.
    pub fn new(limits: MemoryStoreLimits) -> Self {
        Self {
            claims: Mutex::new(Claims::new(limits)),
            records: Mutex::default(),
        }
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        lock(&self.claims).len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the keys and outcomes held are counted for.
    pub fn bytes(&self) -> usize {
        lock(&self.claims).bytes()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(MemoryStoreLimits::default())
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let claims = lock(&self.claims);
        f.debug_struct("MemoryStore")
            .field("limits", claims.limits())
            .field("len", &claims.len())
            .finish()
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
        lock(&self.claims).claim(key, fingerprint, terms, now)
    }

    async fn finish(&self, lease: &Lease, recorded: Recorded) -> Result<(), StoreError> {
        lock(&self.claims).finish(lease, recorded)
    }

    async fn release(&self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        lock(&self.claims).release(lease, release)
    }
}

impl RecordStore for MemoryStore {
    async fn read(&self, key: &RecordKey) -> Result<Versioned, StoreError> {
        Ok(lock(&self.records).read(key))
    }

    async fn list(&self, collection: &str) -> Result<Listing, StoreError> {
        lock(&self.records).list(collection)
    }

    async fn commit(
        &self,
        changes: &Changes,
        outcome: Option<(&Lease, &Recorded)>,
    ) -> Result<Committed, StoreError> {
        let Some((lease, recorded)) = outcome else {
            return Ok(lock(&self.records).commit(changes));
        };
        // The records are locked inside the claims' lock, once the lease is known to hold: the
        // writes and the outcome land together.
        let mut claims = lock(&self.claims);
        claims.check(lease)?;
        let committed = lock(&self.records).commit(changes);
        if committed == Committed::Done {
            claims.finish(lease, recorded.clone())?;
        }
        Ok(committed)
    }

    async fn unclaimed(&self, key: &IdempotencyKey) -> Result<bool, StoreError> {
        Ok(lock(&self.claims).unclaimed(key, Instant::now()))
    }

    async fn commit_unclaimed(
        &self,
        changes: &Changes,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &Recorded,
    ) -> Result<UnclaimedCommit, StoreError> {
        // Claimed, committed and finished under the claims' lock: nobody sees the claim held.
        let mut claims = lock(&self.claims);
        let terms = LeaseTerms {
            duration: Duration::from_secs(60),
            if_lost: Release::Retry,
        };
        // A key kept in any state is taken; a new one is checked against the bounds (a full
        // share refuses here, before anything is applied).
        let Claim::Acquired(lease) = claims.claim(key, fingerprint, terms, Instant::now())? else {
            return Ok(UnclaimedCommit::Taken);
        };
        match lock(&self.records).commit(changes) {
            Committed::Done => {
                claims.finish(&lease, recorded.clone())?;
                Ok(UnclaimedCommit::Done)
            }
            Committed::Conflict => {
                claims.release(&lease, Release::Retry)?;
                Ok(UnclaimedCommit::Conflict)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::{
        execution::{ExecutionId, ExecutionStatus},
        idempotency::{Claim, Fingerprint, IdempotencyKey, LeaseTerms, Release},
    };

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
        let store = MemoryStore::new(
            MemoryStoreLimits::default().with_request_ids(|ids| ids.with_max_per_principal(2)),
        );
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
                .with_request_ids(|ids| ids.with_max_per_principal(100).with_max(150)),
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
                .with_request_ids(|ids| ids.with_max_per_principal(1))
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
        let store = MemoryStore::new(MemoryStoreLimits::default().with_request_ids(|ids| {
            ids.with_max_outcome_bytes(64 << 10)
                .with_max_bytes_per_principal(1 << 20)
        }));
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
