//! The contract of [`RecordStore::unclaimed`] and [`RecordStore::commit_unclaimed`]: a
//! transactional call's request id recorded by the commit of its writes, without a claim
//! first. For the stores that implement them, beside [`record_conformance`](crate::record_conformance).
//!
//! ```
//! use carmy_core::{MemoryStore, MemoryStoreLimits};
//! use carmy_store::conformance::Setup;
//!
//! carmy_store::unclaimed_conformance_tests!(|setup: Setup| {
//!     MemoryStore::new(MemoryStoreLimits::default().with_request_ids(|ids| {
//!         ids.with_max_per_principal(setup.max_entries_per_principal)
//!     }))
//! });
//! # fn main() {}
//! ```

use carmy_core::{
    Claim, Fingerprint, IdempotencyKey, Recorded, StoreError,
    records::{Changes, RecordStore, UnclaimedCommit, Versioned},
};
use serde_json::json;

use crate::{
    conformance::Opener,
    record_conformance::{at, fingerprint, put, read, recorded, terms},
};

/// One `#[test]` per scenario of this suite, for the store the closure opens (honouring
/// `Setup::max_entries_per_principal`); `when = EXPR` as for
/// [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! unclaimed_conformance_tests {
    ($open:expr $(,)?) => {
        $crate::unclaimed_conformance_tests!($open, when = true);
    };
    ($open:expr, when = $available:expr $(,)?) => {
        $crate::__scenario_tests!(
            conformance, unclaimed_conformance, $open, $available;
            an_unknown_request_id_is_recorded_with_the_writes,
            a_claimed_request_id_is_taken_and_nothing_applied,
            a_stale_read_conflicts_and_leaves_the_request_id_unclaimed,
            a_full_share_refuses_and_applies_nothing,
            concurrent_commits_of_one_request_id_apply_once,
        );
    };
}

async fn unclaimed<S: RecordStore>(store: &S, key: &IdempotencyKey) -> bool {
    store
        .unclaimed(key)
        .await
        .unwrap_or_else(|error| panic!("looking up {key:?} failed: {error}"))
}

async fn commit<S: RecordStore>(
    store: &S,
    changes: &Changes,
    key: &IdempotencyKey,
    outcome: &Recorded,
) -> Result<UnclaimedCommit, StoreError> {
    store
        .commit_unclaimed(changes, key, fingerprint(), outcome)
        .await
}

/// A request id never seen is unclaimed; committed with it, the writes land and it is
/// finished: a claim replays the outcome (or conflicts, for other arguments), and a second
/// commit under it is taken and applies nothing.
pub async fn an_unknown_request_id_is_recorded_with_the_writes<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = IdempotencyKey::new(Some("alice"), "r1");
    assert!(unclaimed(&*store, &key).await);
    let outcome = recorded("exec_1");
    let changes = put(at("orders", "ord-1"), json!({ "total": 12 }));
    let committed = commit(&*store, &changes, &key, &outcome).await.unwrap();
    assert_eq!(committed, UnclaimedCommit::Done);
    assert_eq!(
        read(&*store, &at("orders", "ord-1")).await.value,
        Some(json!({ "total": 12 }))
    );
    assert!(!unclaimed(&*store, &key).await);
    match store.claim(&key, fingerprint(), terms()).await.unwrap() {
        Claim::Finished(kept) => assert_eq!(kept, outcome),
        other => panic!("the committed request id must replay its outcome, got {other:?}"),
    }
    let other_arguments = Fingerprint::of("place_order", &json!({ "sku": "other" }));
    assert!(matches!(
        store.claim(&key, other_arguments, terms()).await.unwrap(),
        Claim::Conflict
    ));
    let again = put(at("orders", "ord-2"), json!({ "total": 1 }));
    let committed = commit(&*store, &again, &key, &recorded("exec_2"))
        .await
        .unwrap();
    assert_eq!(committed, UnclaimedCommit::Taken);
    assert_eq!(
        read(&*store, &at("orders", "ord-2")).await,
        Versioned::ABSENT
    );
}

/// A request id claimed since the look is taken: nothing is applied, and its holder still
/// holds it.
pub async fn a_claimed_request_id_is_taken_and_nothing_applied<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = IdempotencyKey::new(Some("alice"), "r2");
    let Claim::Acquired(lease) = store.claim(&key, fingerprint(), terms()).await.unwrap() else {
        panic!("a fresh key is acquired");
    };
    assert!(!unclaimed(&*store, &key).await);
    let changes = put(at("orders", "ord-1"), json!(1));
    let committed = commit(&*store, &changes, &key, &recorded("exec_other"))
        .await
        .unwrap();
    assert_eq!(committed, UnclaimedCommit::Taken);
    assert_eq!(
        read(&*store, &at("orders", "ord-1")).await,
        Versioned::ABSENT
    );
    let outcome = recorded("exec_holder");
    store.finish(&lease, outcome.clone()).await.unwrap();
    match store.claim(&key, fingerprint(), terms()).await.unwrap() {
        Claim::Finished(kept) => assert_eq!(kept, outcome),
        other => panic!("the holder's outcome must be kept, got {other:?}"),
    }
}

/// A commit whose read went stale applies nothing and leaves the request id unclaimed, for
/// the next run to commit with it.
pub async fn a_stale_read_conflicts_and_leaves_the_request_id_unclaimed<S: RecordStore>(
    opener: Opener<S>,
) {
    let store = opener.open().await;
    let stock = at("stock", "sku-1");
    let _ = store
        .commit(&put(stock.clone(), json!(5)), None)
        .await
        .unwrap();
    let seen = read(&*store, &stock).await;
    let _ = store
        .commit(&put(stock.clone(), json!(4)), None)
        .await
        .unwrap();
    let key = IdempotencyKey::new(Some("alice"), "r3");
    let stale = Changes {
        reads: vec![(stock.clone(), seen.version)],
        writes: vec![(stock.clone(), Some(json!(3)))],
        ..Changes::default()
    };
    let committed = commit(&*store, &stale, &key, &recorded("exec_1"))
        .await
        .unwrap();
    assert_eq!(committed, UnclaimedCommit::Conflict);
    assert_eq!(read(&*store, &stock).await.value, Some(json!(4)));
    assert!(unclaimed(&*store, &key).await);
    let fresh = read(&*store, &stock).await;
    let retry = Changes {
        reads: vec![(stock.clone(), fresh.version)],
        writes: vec![(stock.clone(), Some(json!(3)))],
        ..Changes::default()
    };
    let committed = commit(&*store, &retry, &key, &recorded("exec_1"))
        .await
        .unwrap();
    assert_eq!(committed, UnclaimedCommit::Done);
    assert_eq!(read(&*store, &stock).await.value, Some(json!(3)));
}

/// A principal whose share is full is refused (`Full`, as a claim would be, or "taken", for
/// the claim that follows to refuse) and nothing is applied; another principal's commit goes
/// through.
pub async fn a_full_share_refuses_and_applies_nothing<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open_with(1).await;
    let first = IdempotencyKey::new(Some("alice"), "r4");
    let changes = put(at("orders", "ord-1"), json!(1));
    let committed = commit(&*store, &changes, &first, &recorded("exec_1"))
        .await
        .unwrap();
    assert_eq!(committed, UnclaimedCommit::Done);
    let second = IdempotencyKey::new(Some("alice"), "r5");
    let changes = put(at("orders", "ord-2"), json!(2));
    let refused = commit(&*store, &changes, &second, &recorded("exec_2")).await;
    assert!(
        matches!(
            refused,
            Err(StoreError::Full(_)) | Ok(UnclaimedCommit::Taken)
        ),
        "a full share must refuse, got {refused:?}"
    );
    assert_eq!(
        read(&*store, &at("orders", "ord-2")).await,
        Versioned::ABSENT
    );
    assert!(unclaimed(&*store, &second).await);
    let claimed = store.claim(&second, fingerprint(), terms()).await;
    assert!(
        matches!(claimed, Err(StoreError::Full(_))),
        "the claim that follows refuses, got {claimed:?}"
    );
    let bobs = IdempotencyKey::new(Some("bob"), "r5");
    let committed = commit(&*store, &changes, &bobs, &recorded("exec_3"))
        .await
        .unwrap();
    assert_eq!(committed, UnclaimedCommit::Done);
}

/// Commits of one request id racing each other: exactly one is applied, and its outcome is
/// the one kept.
pub async fn concurrent_commits_of_one_request_id_apply_once<S: RecordStore>(opener: Opener<S>) {
    const RACERS: usize = 8;
    let store = opener.open().await;
    let key = IdempotencyKey::new(Some("alice"), "r6");
    let racers = (0..RACERS).map(|n| {
        let store = std::sync::Arc::clone(&store);
        let key = key.clone();
        tokio::spawn(async move {
            let changes = put(at("orders", &format!("ord-{n}")), json!(n));
            let outcome = recorded(&format!("exec_{n}"));
            let committed = commit(&*store, &changes, &key, &outcome).await.unwrap();
            (committed, outcome)
        })
    });
    let mut kept = Vec::new();
    for racer in racers.collect::<Vec<_>>() {
        let (committed, outcome) = racer.await.unwrap();
        match committed {
            UnclaimedCommit::Done => kept.push(outcome),
            UnclaimedCommit::Taken => {}
            UnclaimedCommit::Conflict => panic!("nothing was read, nothing can conflict"),
        }
    }
    assert_eq!(kept.len(), 1, "exactly one commit applies");
    let mut written = 0;
    for n in 0..RACERS {
        if read(&*store, &at("orders", &format!("ord-{n}")))
            .await
            .value
            .is_some()
        {
            written += 1;
        }
    }
    assert_eq!(written, 1, "only the winner's writes land");
    match store.claim(&key, fingerprint(), terms()).await.unwrap() {
        Claim::Finished(outcome) => assert_eq!(outcome, kept[0]),
        other => panic!("the winner's outcome must be kept, got {other:?}"),
    }
}
