//! Leases that run out: a lost write is uncertain, a lost read runs again, and a holder that
//! comes back late changes nothing.

use std::time::Duration;

use carmy_core::{Claim, ExecutionStatus, IdempotencyStore, Release, StoreError};
use tokio::time::sleep;

use super::{
    opener::Opener,
    support::{
        LONG, SHORT, acquire, claim, fingerprint, finished, key, read, running, succeeded, write,
    },
};

/// A write whose holder vanished (its lease ran out) is uncertain: it may have committed, so it
/// is not run again. A write released as uncertain says so with its status.
pub async fn uncertain_after_lost_write_lease<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let lost = key("alice", "lost-write");
    acquire(&*store, &lost, fingerprint(1), write(SHORT)).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    for _ in 0..2 {
        assert!(matches!(
            claim(&*store, &lost, fingerprint(1), write(LONG)).await,
            Claim::Uncertain(ExecutionStatus::Lost)
        ));
    }

    let timed_out = key("alice", "timed-out-write");
    let lease = acquire(&*store, &timed_out, fingerprint(1), write(LONG)).await;
    store
        .release(&lease, Release::Uncertain(ExecutionStatus::TimedOut))
        .await
        .unwrap();
    assert!(matches!(
        claim(&*store, &timed_out, fingerprint(1), write(LONG)).await,
        Claim::Uncertain(ExecutionStatus::TimedOut)
    ));
}

/// A read (or an idempotent call) whose holder vanished is forgotten once its lease runs out:
/// the next claim runs it again, under a new lease.
pub async fn retry_after_lost_read_lease<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = key("alice", "lost-read");
    let lost = acquire(&*store, &key, fingerprint(1), read(SHORT)).await;
    drop(running(&*store, &key, fingerprint(1), read(SHORT)).await);
    sleep(SHORT + Duration::from_millis(100)).await;
    let again = acquire(&*store, &key, fingerprint(1), read(LONG)).await;
    assert_ne!(lost, again);
    store.finish(&again, succeeded("exec_r")).await.unwrap();
    assert_eq!(
        finished(&*store, &key, fingerprint(1)).await,
        succeeded("exec_r")
    );
}

/// A holder that comes back after its lease ran out and the key moved on gets `LeaseLost`,
/// and changes nothing; a settled lease cannot settle again.
pub async fn late_holder_gets_lease_lost<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let read_key = key("alice", "late-read");
    let late = acquire(&*store, &read_key, fingerprint(1), read(SHORT)).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    let successor = acquire(&*store, &read_key, fingerprint(1), read(LONG)).await;
    assert!(matches!(
        store.finish(&late, succeeded("exec_late")).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.release(&late, Release::Retry).await,
        Err(StoreError::LeaseLost)
    ));
    store
        .finish(&successor, succeeded("exec_successor"))
        .await
        .unwrap();
    assert!(matches!(
        store.finish(&successor, succeeded("exec_again")).await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        finished(&*store, &read_key, fingerprint(1)).await,
        succeeded("exec_successor")
    );

    let write_key = key("alice", "late-write");
    let late = acquire(&*store, &write_key, fingerprint(1), write(SHORT)).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    assert!(matches!(
        claim(&*store, &write_key, fingerprint(1), write(LONG)).await,
        Claim::Uncertain(ExecutionStatus::Lost)
    ));
    assert!(matches!(
        store.finish(&late, succeeded("exec_late")).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        claim(&*store, &write_key, fingerprint(1), write(LONG)).await,
        Claim::Uncertain(ExecutionStatus::Lost)
    ));
}
