//! What every scenario of the suite shares: the leases it takes, the keys and outcomes it
//! uses, and claims that fail the scenario when the store answers otherwise than expected.

use std::time::Duration;

use carmy_core::{
    Claim, ExecutionId, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore, Lease,
    LeaseTerms, Recorded, Release,
};
use serde_json::json;
use tokio::time::timeout;

/// A lease no scenario outlives unless it means to.
pub(super) const LONG: Duration = Duration::from_secs(60);
/// A lease a scenario waits out.
pub(super) const SHORT: Duration = Duration::from_millis(300);
/// How long a waiter may take to notice what it waits for.
pub(super) const NOTICE: Duration = Duration::from_secs(3);

pub(super) fn write(duration: Duration) -> LeaseTerms {
    LeaseTerms {
        duration,
        if_lost: Release::Uncertain(ExecutionStatus::Lost),
    }
}

pub(super) fn read(duration: Duration) -> LeaseTerms {
    LeaseTerms {
        duration,
        if_lost: Release::Retry,
    }
}

pub(super) fn fingerprint(n: u32) -> Fingerprint {
    Fingerprint::of("place_order", &json!({ "n": n }))
}

pub(super) fn key(principal: &str, request_id: &str) -> IdempotencyKey {
    IdempotencyKey::new(Some(principal), request_id)
}

pub(super) fn succeeded(id: &str) -> Recorded {
    Recorded::new(
        ExecutionId::from(id),
        ExecutionStatus::Succeeded,
        Ok(json!({ "order": id, "total": 12.5, "lines": [1, 2, 3] })),
    )
}

pub(super) async fn claim<S: IdempotencyStore>(
    store: &S,
    key: &IdempotencyKey,
    fingerprint: Fingerprint,
    terms: LeaseTerms,
) -> Claim {
    match timeout(NOTICE, store.claim(key, fingerprint, terms)).await {
        Ok(Ok(claim)) => claim,
        Ok(Err(error)) => panic!("claiming {key:?} failed: {error}"),
        Err(_) => panic!("claiming {key:?} took more than {NOTICE:?}"),
    }
}

pub(super) async fn acquire<S: IdempotencyStore>(
    store: &S,
    key: &IdempotencyKey,
    fingerprint: Fingerprint,
    terms: LeaseTerms,
) -> Lease {
    match claim(store, key, fingerprint, terms).await {
        Claim::Acquired(lease) => lease,
        other => panic!("expected to acquire {key:?}, got {other:?}"),
    }
}

pub(super) async fn finished<S: IdempotencyStore>(
    store: &S,
    key: &IdempotencyKey,
    fp: Fingerprint,
) -> Recorded {
    match claim(store, key, fp, write(LONG)).await {
        Claim::Finished(recorded) => recorded,
        other => panic!("expected {key:?} to be finished, got {other:?}"),
    }
}

pub(super) async fn running<S: IdempotencyStore>(
    store: &S,
    key: &IdempotencyKey,
    fp: Fingerprint,
    terms: LeaseTerms,
) -> carmy_core::Waiter {
    match claim(store, key, fp, terms).await {
        Claim::Running(waiter) => waiter,
        other => panic!("expected {key:?} to be running, got {other:?}"),
    }
}
