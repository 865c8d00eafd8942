//! [`fails_closed_while_down`]: a store kept on a server fails closed while its [`Outage`]
//! lasts, and serves again once it ends.

use std::{sync::Arc, time::Duration};

use carmy_core::{Claim, IdempotencyStore, Release, StoreError};
use tokio::time::{Instant, sleep, timeout};

use super::support::{
    LONG, NOTICE, acquire, fingerprint, finished, key, running, succeeded, write,
};

/// The server of a store under test, which [`fails_closed_while_down`] takes down and brings
/// back. Both calls block until done, and run on a blocking thread.
pub trait Outage: Send + Sync + 'static {
    /// Makes the server unreachable (it crashes, or stops); what it committed is kept.
    fn take_down(&self);
    /// Starts it again with what it had committed, and returns once it accepts connections.
    fn bring_back(&self);
}

/// How long a store may take to say it cannot reach its server.
const DOWN_PATIENCE: Duration = Duration::from_secs(20);
/// How long a store may take to serve again once its server is back.
const BACK_PATIENCE: Duration = Duration::from_secs(30);

/// While its server is down, every call of the store fails closed with
/// [`StoreError::Unavailable`] within a bounded time (nothing is acquired, nothing is guessed);
/// once the server is back, the same store serves again by itself, with every record it had
/// committed, and the claim held across the outage is still its holder's.
pub async fn fails_closed_while_down<S: IdempotencyStore, O: Outage>(store: Arc<S>, outage: O) {
    let outage = Arc::new(outage);
    let done = key("alice", "finished-before");
    let lease = acquire(&*store, &done, fingerprint(1), write(LONG)).await;
    store
        .finish(&lease, succeeded("exec_before"))
        .await
        .unwrap();
    let held = key("alice", "held-across");
    let held_lease = acquire(&*store, &held, fingerprint(1), write(LONG)).await;
    let down = Arc::clone(&outage);
    tokio::task::spawn_blocking(move || down.take_down())
        .await
        .expect("taking the server down panicked");

    let unavailable = |what: &str, answer: Result<Result<(), StoreError>, _>| match answer {
        Ok(Err(StoreError::Unavailable(_))) => {}
        Ok(other) => panic!("{what} with the server down must fail closed, got {other:?}"),
        Err(_) => panic!("{what} with the server down took more than {DOWN_PATIENCE:?}"),
    };
    for (what, key) in [
        ("a new claim", key("alice", "new")),
        ("a replay", done.clone()),
    ] {
        let answer = timeout(
            DOWN_PATIENCE,
            store.claim(&key, fingerprint(1), write(LONG)),
        )
        .await;
        unavailable(what, answer.map(|claim| claim.map(drop)));
    }
    let answer = timeout(
        DOWN_PATIENCE,
        store.finish(&held_lease, succeeded("exec_x")),
    )
    .await;
    unavailable("a finish", answer);
    let answer = timeout(DOWN_PATIENCE, store.release(&held_lease, Release::Retry)).await;
    unavailable("a release", answer);

    let back = Arc::clone(&outage);
    tokio::task::spawn_blocking(move || back.bring_back())
        .await
        .expect("bringing the server back panicked");
    let deadline = Instant::now() + BACK_PATIENCE;
    let replayed = loop {
        match timeout(NOTICE, store.claim(&done, fingerprint(1), write(LONG))).await {
            Ok(Ok(Claim::Finished(recorded))) => break recorded,
            Ok(Ok(other)) => panic!("after the outage, a finished key answered {other:?}"),
            Ok(Err(StoreError::Unavailable(_))) | Err(_) => {
                assert!(
                    Instant::now() < deadline,
                    "the store did not serve again within {BACK_PATIENCE:?} of its server's return"
                );
                sleep(Duration::from_millis(100)).await;
            }
            Ok(Err(error)) => panic!("after the outage, a claim failed with {error}"),
        }
    };
    assert_eq!(replayed, succeeded("exec_before"));
    drop(running(&*store, &held, fingerprint(1), write(LONG)).await);
    store
        .finish(&held_lease, succeeded("exec_held"))
        .await
        .expect("the claim held across the outage is still its holder's");
    assert_eq!(
        finished(&*store, &held, fingerprint(1)).await,
        succeeded("exec_held")
    );
    acquire(&*store, &key("alice", "new"), fingerprint(1), write(LONG)).await;
}
