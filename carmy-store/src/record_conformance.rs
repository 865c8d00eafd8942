//! The contract of [`RecordStore`], as scenarios every store that keeps records must pass,
//! beside the idempotency ones of [`conformance`](crate::conformance).
//!
//! ```
//! use carmy_core::MemoryStore;
//! use carmy_store::conformance::Setup;
//!
//! carmy_store::record_conformance_tests!(|_: Setup| MemoryStore::default());
//! # fn main() {}
//! ```

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    Claim, ExecutionId, ExecutionStatus, Fingerprint, IdempotencyKey, LeaseTerms, Recorded,
    Release, StoreError,
    records::{Changes, Committed, RecordKey, RecordStore, Versioned},
};
use serde_json::{Value, json};
use tokio::time::sleep;

use crate::conformance::Opener;

/// One `#[test]` per scenario of this suite, for the store the closure opens; `when = EXPR`
/// as for [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! record_conformance_tests {
    ($open:expr $(,)?) => {
        $crate::record_conformance_tests!($open, when = true);
    };
    ($open:expr, when = $available:expr $(,)?) => {
        $crate::__scenario_tests!(
            conformance, record_conformance, $open, $available;
            absent_records_are_version_zero,
            writes_commit_and_stamps_grow,
            a_stale_read_conflicts_and_applies_nothing,
            a_stale_absence_conflicts,
            a_stale_listing_conflicts,
            deleted_and_written_again_never_looks_unchanged,
            an_outcome_commits_with_the_writes,
            a_conflict_keeps_the_lease_and_records_nothing,
            a_lost_lease_applies_nothing,
            concurrent_increments_lose_no_update,
            listings_are_ordered_and_collections_apart,
            values_round_trip_exactly,
        );
    };
}

pub(crate) fn at(collection: &str, key: &str) -> RecordKey {
    RecordKey::new(collection, key)
}

pub(crate) fn put(key: RecordKey, value: Value) -> Changes {
    Changes {
        writes: vec![(key, Some(value))],
        ..Changes::default()
    }
}

async fn commit<S: RecordStore>(store: &S, changes: &Changes) -> Committed {
    store
        .commit(changes, None)
        .await
        .unwrap_or_else(|error| panic!("committing {changes:?} failed: {error}"))
}

pub(crate) async fn read<S: RecordStore>(store: &S, key: &RecordKey) -> Versioned {
    store
        .read(key)
        .await
        .unwrap_or_else(|error| panic!("reading {key:?} failed: {error}"))
}

pub(crate) fn terms() -> LeaseTerms {
    LeaseTerms {
        duration: Duration::from_secs(60),
        if_lost: Release::Retry,
    }
}

pub(crate) fn recorded(id: &str) -> Recorded {
    Recorded::new(
        ExecutionId::from(id),
        ExecutionStatus::Succeeded,
        Ok(json!({ "order": id })),
    )
}

pub(crate) fn fingerprint() -> Fingerprint {
    Fingerprint::of("place_order", &json!({}))
}

/// A record never written reads as absent, version 0; so does an empty collection's listing.
pub async fn absent_records_are_version_zero<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    assert_eq!(
        read(&*store, &at("orders", "none")).await,
        Versioned::ABSENT
    );
    let listing = store.list("orders").await.unwrap();
    assert_eq!((listing.version, listing.records.len()), (0, 0));
}

/// Committed writes are read back; each commit's stamp is higher than the last.
pub async fn writes_commit_and_stamps_grow<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = at("orders", "ord-1");
    assert_eq!(
        commit(&*store, &put(key.clone(), json!({ "n": 1 }))).await,
        Committed::Done
    );
    let first = read(&*store, &key).await;
    assert_eq!(first.value, Some(json!({ "n": 1 })));
    assert!(first.version > 0);
    let other = at("stock", "sku-1");
    assert_eq!(
        commit(&*store, &put(other.clone(), json!(4))).await,
        Committed::Done
    );
    assert!(read(&*store, &other).await.version > first.version);
    assert_eq!(
        commit(&*store, &put(key.clone(), json!({ "n": 2 }))).await,
        Committed::Done
    );
    let second = read(&*store, &key).await;
    assert_eq!(second.value, Some(json!({ "n": 2 })));
    assert!(second.version > first.version);
    // A read-only commit whose reads hold changes nothing.
    let check = Changes {
        reads: vec![(key.clone(), second.version)],
        ..Changes::default()
    };
    assert_eq!(commit(&*store, &check).await, Committed::Done);
    assert_eq!(read(&*store, &key).await, second);
}

/// A commit whose read is no longer at the version it saw applies none of its writes.
pub async fn a_stale_read_conflicts_and_applies_nothing<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let stock = at("stock", "sku-1");
    let _ = commit(&*store, &put(stock.clone(), json!(5))).await;
    let seen = read(&*store, &stock).await;
    let _ = commit(&*store, &put(stock.clone(), json!(4))).await;
    let stale = Changes {
        reads: vec![(stock.clone(), seen.version)],
        writes: vec![
            (stock.clone(), Some(json!(3))),
            (at("orders", "ord-9"), Some(json!("placed"))),
        ],
        ..Changes::default()
    };
    assert_eq!(commit(&*store, &stale).await, Committed::Conflict);
    assert_eq!(read(&*store, &stock).await.value, Some(json!(4)));
    assert_eq!(
        read(&*store, &at("orders", "ord-9")).await,
        Versioned::ABSENT
    );
}

/// A record read as absent and written by someone else since is a conflict.
pub async fn a_stale_absence_conflicts<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = at("users", "ada");
    let _ = commit(&*store, &put(key.clone(), json!("first"))).await;
    let stale = Changes {
        reads: vec![(key.clone(), 0)],
        writes: vec![(key.clone(), Some(json!("second")))],
        ..Changes::default()
    };
    assert_eq!(commit(&*store, &stale).await, Committed::Conflict);
    assert_eq!(read(&*store, &key).await.value, Some(json!("first")));
}

/// A listing is checked as a whole: a record added to (or removed from) the collection since
/// is a conflict, even under another key.
pub async fn a_stale_listing_conflicts<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let _ = commit(&*store, &put(at("orders", "ord-1"), json!(1))).await;
    let listed = store.list("orders").await.unwrap();
    assert_eq!(listed.records, [("ord-1".to_owned(), json!(1))]);
    assert!(listed.version > 0);
    let _ = commit(&*store, &put(at("orders", "ord-2"), json!(2))).await;
    let stale = Changes {
        listed: vec![("orders".to_owned(), listed.version)],
        writes: vec![(at("summary", "count"), Some(json!(1)))],
        ..Changes::default()
    };
    assert_eq!(commit(&*store, &stale).await, Committed::Conflict);
    assert_eq!(
        read(&*store, &at("summary", "count")).await,
        Versioned::ABSENT
    );
    // A deletion moves the collection on too.
    let listed = store.list("orders").await.unwrap();
    let delete = Changes {
        writes: vec![(at("orders", "ord-1"), None)],
        ..Changes::default()
    };
    let _ = commit(&*store, &delete).await;
    let after = store.list("orders").await.unwrap();
    assert!(after.version > listed.version);
    assert_eq!(after.records, [("ord-2".to_owned(), json!(2))]);
}

/// A record deleted and written again has a new version: a reader of the old one conflicts.
pub async fn deleted_and_written_again_never_looks_unchanged<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = at("carts", "c1");
    let _ = commit(&*store, &put(key.clone(), json!("a"))).await;
    let seen = read(&*store, &key).await;
    let delete = Changes {
        writes: vec![(key.clone(), None)],
        ..Changes::default()
    };
    let _ = commit(&*store, &delete).await;
    assert_eq!(read(&*store, &key).await, Versioned::ABSENT);
    let _ = commit(&*store, &put(key.clone(), json!("a"))).await;
    let again = read(&*store, &key).await;
    assert_eq!(again.value, seen.value);
    assert_ne!(again.version, seen.version);
    let stale = Changes {
        reads: vec![(key.clone(), seen.version)],
        writes: vec![(key, Some(json!("b")))],
        ..Changes::default()
    };
    assert_eq!(commit(&*store, &stale).await, Committed::Conflict);
}

/// A commit with an outcome finishes the lease: the key replays the outcome, and the writes
/// are there.
pub async fn an_outcome_commits_with_the_writes<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = IdempotencyKey::new(Some("alice"), "r1");
    let Claim::Acquired(lease) = store.claim(&key, fingerprint(), terms()).await.unwrap() else {
        panic!("a fresh key is acquired");
    };
    let changes = put(at("orders", "ord-1"), json!({ "total": 12 }));
    let outcome = recorded("exec_1");
    let committed = store
        .commit(&changes, Some((&lease, &outcome)))
        .await
        .unwrap();
    assert_eq!(committed, Committed::Done);
    match store.claim(&key, fingerprint(), terms()).await.unwrap() {
        Claim::Finished(kept) => assert_eq!(kept, outcome),
        other => panic!("the committed key must replay its outcome, got {other:?}"),
    }
    assert_eq!(
        read(&*store, &at("orders", "ord-1")).await.value,
        Some(json!({ "total": 12 }))
    );
    // Its lease is spent: finishing it again is refused.
    assert!(matches!(
        store.finish(&lease, recorded("exec_2")).await,
        Err(StoreError::LeaseLost)
    ));
}

/// A conflicting commit with an outcome records nothing: the lease still holds, and the next
/// run can commit under it.
pub async fn a_conflict_keeps_the_lease_and_records_nothing<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let stock = at("stock", "sku-1");
    let _ = commit(&*store, &put(stock.clone(), json!(5))).await;
    let seen = read(&*store, &stock).await;
    let key = IdempotencyKey::new(Some("alice"), "r2");
    let Claim::Acquired(lease) = store.claim(&key, fingerprint(), terms()).await.unwrap() else {
        panic!("a fresh key is acquired");
    };
    let _ = commit(&*store, &put(stock.clone(), json!(4))).await;
    let stale = Changes {
        reads: vec![(stock.clone(), seen.version)],
        writes: vec![(stock.clone(), Some(json!(4)))],
        ..Changes::default()
    };
    let committed = store
        .commit(&stale, Some((&lease, &recorded("exec_1"))))
        .await
        .unwrap();
    assert_eq!(committed, Committed::Conflict);
    assert!(matches!(
        store.claim(&key, fingerprint(), terms()).await.unwrap(),
        Claim::Running(_)
    ));
    let fresh = read(&*store, &stock).await;
    let retry = Changes {
        reads: vec![(stock.clone(), fresh.version)],
        writes: vec![(stock.clone(), Some(json!(3)))],
        ..Changes::default()
    };
    let committed = store
        .commit(&retry, Some((&lease, &recorded("exec_1"))))
        .await
        .unwrap();
    assert_eq!(committed, Committed::Done);
    assert_eq!(read(&*store, &stock).await.value, Some(json!(3)));
}

/// A commit under a lease that is no longer its key's holder fails and applies nothing.
pub async fn a_lost_lease_applies_nothing<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = IdempotencyKey::new(Some("alice"), "r3");
    let short = LeaseTerms {
        duration: Duration::from_millis(200),
        if_lost: Release::Retry,
    };
    let Claim::Acquired(late) = store.claim(&key, fingerprint(), short).await.unwrap() else {
        panic!("a fresh key is acquired");
    };
    sleep(Duration::from_millis(400)).await;
    // Another execution takes the expired key over.
    let Claim::Acquired(_successor) = store.claim(&key, fingerprint(), terms()).await.unwrap()
    else {
        panic!("an expired retry lease frees the key");
    };
    let changes = put(at("orders", "late"), json!(1));
    assert!(matches!(
        store
            .commit(&changes, Some((&late, &recorded("exec_late"))))
            .await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        read(&*store, &at("orders", "late")).await,
        Versioned::ABSENT
    );
}

/// Many writers increment one counter, each retrying on conflict as the runtime does: every
/// increment lands exactly once.
pub async fn concurrent_increments_lose_no_update<S: RecordStore>(opener: Opener<S>) {
    const WRITERS: usize = 12;
    const EACH: usize = 3;
    let store = opener.open().await;
    let conflicts = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let store = Arc::clone(&store);
            let conflicts = Arc::clone(&conflicts);
            tokio::spawn(async move {
                let counter = at("counters", "orders");
                for _ in 0..EACH {
                    loop {
                        let seen = read(&*store, &counter).await;
                        let n = seen.value.as_ref().and_then(Value::as_u64).unwrap_or(0);
                        tokio::task::yield_now().await;
                        let changes = Changes {
                            reads: vec![(counter.clone(), seen.version)],
                            writes: vec![(counter.clone(), Some(json!(n + 1)))],
                            ..Changes::default()
                        };
                        match commit(&*store, &changes).await {
                            Committed::Done => break,
                            Committed::Conflict => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let total = read(&*store, &at("counters", "orders")).await.value;
    assert_eq!(total, Some(json!(WRITERS * EACH)));
}

/// Listings are ordered by key, bytewise; the same key in two collections is two records.
pub async fn listings_are_ordered_and_collections_apart<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let changes = Changes {
        writes: ["b", "a", "B", "a-1", "é", "ord-1000", "ord-999"]
            .into_iter()
            .map(|key| (at("keys", key), Some(json!(key))))
            .chain([(at("other", "a"), Some(json!("other a")))])
            .collect(),
        ..Changes::default()
    };
    let _ = commit(&*store, &changes).await;
    let keys: Vec<String> = store
        .list("keys")
        .await
        .unwrap()
        .records
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    assert_eq!(keys, ["B", "a", "a-1", "b", "ord-1000", "ord-999", "é"]);
    assert_eq!(
        read(&*store, &at("keys", "a")).await.value,
        Some(json!("a"))
    );
    assert_eq!(
        read(&*store, &at("other", "a")).await.value,
        Some(json!("other a"))
    );
    assert_eq!(store.list("other").await.unwrap().records.len(), 1);
}

/// Values come back exactly as written: numbers, text, nesting, `null` inside.
pub async fn values_round_trip_exactly<S: RecordStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let values = [
        json!(null),
        json!(0.1 + 0.2),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(-0.0),
        json!("é\u{0}\n\"quoted\""),
        json!({ "nested": [1, { "b": null }, []], "a": {} }),
    ];
    for (n, value) in values.iter().enumerate() {
        let key = at("values", &format!("v{n}"));
        let _ = commit(&*store, &put(key.clone(), value.clone())).await;
        assert_eq!(
            read(&*store, &key).await.value.as_ref(),
            Some(value),
            "value {n}"
        );
    }
}
