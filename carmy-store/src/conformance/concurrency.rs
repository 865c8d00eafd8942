//! Concurrent claims and retries of one key: one winner, one run.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{Claim, IdempotencyStore};
use tokio::time::{sleep, timeout};

use super::{
    opener::Opener,
    support::{LONG, NOTICE, claim, fingerprint, key, succeeded, write},
};

/// Of many concurrent claims of one key, exactly one is `Acquired`; the others see it running.
pub async fn concurrent_claims_one_winner<S: IdempotencyStore>(opener: Opener<S>) {
    const CLAIMS: usize = 32;
    let store = opener.open().await;
    let start = Arc::new(tokio::sync::Barrier::new(CLAIMS));
    let claims: Vec<_> = (0..CLAIMS)
        .map(|_| {
            let store = Arc::clone(&store);
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let key = key("alice", "contended");
                match claim(&*store, &key, fingerprint(1), write(LONG)).await {
                    Claim::Acquired(_) => true,
                    Claim::Running(_) => false,
                    other => panic!("a concurrent claim got {other:?}"),
                }
            })
        })
        .collect();
    let mut acquired = 0;
    for claim in claims {
        acquired += usize::from(claim.await.unwrap());
    }
    assert_eq!(
        acquired, 1,
        "{acquired} of {CLAIMS} concurrent claims acquired the key"
    );
}

/// Many concurrent retries of one call, each waiting and claiming again as the runtime does:
/// the call runs once, and every retry gets its execution id.
pub async fn nothing_runs_twice<S: IdempotencyStore>(opener: Opener<S>) {
    const RETRIES: usize = 16;
    let store = opener.open().await;
    let runs = Arc::new(AtomicUsize::new(0));
    let retries: Vec<_> = (0..RETRIES)
        .map(|n| {
            let store = Arc::clone(&store);
            let runs = Arc::clone(&runs);
            tokio::spawn(async move {
                let key = key("alice", "once");
                loop {
                    match claim(&*store, &key, fingerprint(1), write(LONG)).await {
                        Claim::Acquired(lease) => {
                            runs.fetch_add(1, Ordering::SeqCst);
                            sleep(Duration::from_millis(30)).await;
                            let id = format!("exec_{n}");
                            store.finish(&lease, succeeded(&id)).await.unwrap();
                            return id;
                        }
                        Claim::Finished(recorded) => return recorded.execution_id.to_string(),
                        Claim::Running(waiter) => timeout(NOTICE, waiter)
                            .await
                            .expect("a waiter was never woken"),
                        other => panic!("a retry got {other:?}"),
                    }
                }
            })
        })
        .collect();
    let mut ids = Vec::new();
    for retry in retries {
        ids.push(retry.await.unwrap());
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the call ran more than once"
    );
    assert!(ids.windows(2).all(|pair| pair[0] == pair[1]), "{ids:?}");
}
