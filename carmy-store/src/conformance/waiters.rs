//! Retries of a running call: they wait, and wake when the call finishes, is released, or its
//! lease runs out.

use std::{sync::Arc, time::Duration};

use carmy_core::{Claim, ExecutionStatus, IdempotencyStore, Release};
use tokio::time::{Instant, sleep, timeout};

use super::{
    opener::Opener,
    support::{
        LONG, NOTICE, SHORT, acquire, claim, fingerprint, finished, key, read, running, succeeded,
        write,
    },
};

/// A retry of a running call waits (its waiter stays pending while the lease holds), is woken
/// when the call finishes, and then gets the outcome.
pub async fn wait_then_replay<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = key("alice", "wait");
    let lease = acquire(&*store, &key, fingerprint(1), write(LONG)).await;
    let mut waiter = running(&*store, &key, fingerprint(1), write(LONG)).await;
    assert!(
        timeout(Duration::from_millis(200), &mut waiter)
            .await
            .is_err(),
        "a waiter resolved while the call still ran under its lease"
    );
    let finishing = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            sleep(Duration::from_millis(50)).await;
            store.finish(&lease, succeeded("exec_w")).await.unwrap();
        })
    };
    timeout(NOTICE, waiter)
        .await
        .expect("the waiter was not woken when the call finished");
    finishing.await.unwrap();
    assert_eq!(
        finished(&*store, &key, fingerprint(1)).await,
        succeeded("exec_w")
    );
}

/// A claim released for a retry is forgotten: its waiters wake, and the next claim runs it.
pub async fn released_claim_runs_again<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = key("alice", "released");
    let first = acquire(&*store, &key, fingerprint(1), read(LONG)).await;
    let waiter = running(&*store, &key, fingerprint(1), read(LONG)).await;
    store.release(&first, Release::Retry).await.unwrap();
    timeout(NOTICE, waiter)
        .await
        .expect("the waiter was not woken when the claim was released");
    let second = acquire(&*store, &key, fingerprint(1), read(LONG)).await;
    assert_ne!(first, second, "a new claim needs a new lease");
}

/// A waiter on a claim whose holder never comes back resolves when the lease runs out: not
/// before (a retry would spin), and not long after.
pub async fn lease_expiry_wakes_waiters<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = key("alice", "expiring");
    acquire(&*store, &key, fingerprint(1), write(SHORT)).await;
    let started = Instant::now();
    let waiter = running(&*store, &key, fingerprint(1), write(LONG)).await;
    timeout(SHORT + NOTICE, waiter)
        .await
        .expect("the waiter outlived the lease");
    let waited = started.elapsed();
    assert!(
        waited >= SHORT - Duration::from_millis(100),
        "the waiter resolved after {waited:?}, before the lease of {SHORT:?} ran out"
    );
    assert!(matches!(
        claim(&*store, &key, fingerprint(1), write(LONG)).await,
        Claim::Uncertain(ExecutionStatus::Lost)
    ));
}
