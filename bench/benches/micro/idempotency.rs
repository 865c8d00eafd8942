//! The in-memory idempotency store under contention (one mutex around the maps): fresh
//! claims that run and record, and replays of finished keys, from 1, 2 and 4 threads on
//! this 2-core machine.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use carmy_bench::catalog::{self, SearchInput};
use carmy_core::{
    Claim, ExecutionId, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore,
    MemoryStore, MemoryStoreLimits, Recorded,
};
use divan::{Bencher, black_box};
use serde_json::{Value, json};

/// Keys kept finished for the replay benchmark.
const KEYS: u64 = 1_000;

fn recorded() -> Recorded {
    let output = catalog::search(&SearchInput {
        query: "mouse".into(),
        limit: None,
        category: None,
    });
    Recorded {
        execution_id: ExecutionId::generate(),
        status: ExecutionStatus::Succeeded,
        result: Ok(serde_json::to_value(output).unwrap()),
    }
}

fn fingerprint() -> Fingerprint {
    Fingerprint::of("search_products", &json!({ "query": "mouse" }))
}

/// A new request id each time: claim (acquired), then record the outcome. The store is
/// bounded (10,000 keys), so in steady state each claim also evicts the oldest key.
#[divan::bench(threads = [1, 2, 4])]
fn claim_and_finish(bencher: Bencher<'_, '_>) {
    let store = MemoryStore::new(MemoryStoreLimits::default());
    let next = AtomicU64::new(0);
    let fingerprint = fingerprint();
    let recorded = recorded();
    bencher.bench(|| {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let key = IdempotencyKey::new(Some("alice"), &format!("req-{n}"));
        match store.claim(&key, fingerprint).unwrap() {
            Claim::Acquired => store.finish(&key, recorded.clone()),
            other => panic!("a fresh key was {other:?}"),
        }
    });
}

/// A retry of a finished request: the lookup and the clone of the recorded result (4
/// products) that is replayed.
#[divan::bench(threads = [1, 2, 4])]
fn replay_finished(bencher: Bencher<'_, '_>) {
    let store = Arc::new(MemoryStore::new(MemoryStoreLimits::default()));
    let fingerprint = fingerprint();
    let keys: Vec<IdempotencyKey> = (0..KEYS)
        .map(|n| IdempotencyKey::new(Some("alice"), &format!("req-{n}")))
        .collect();
    for key in &keys {
        assert!(matches!(
            store.claim(key, fingerprint).unwrap(),
            Claim::Acquired
        ));
        store.finish(key, recorded());
    }
    let next = AtomicU64::new(0);
    bencher.bench(|| {
        let key = &keys[(next.fetch_add(1, Ordering::Relaxed) % KEYS) as usize];
        match store.claim(black_box(key), fingerprint).unwrap() {
            Claim::Finished(recorded) => black_box::<Value>(recorded.result.unwrap()),
            other => panic!("a finished key was {other:?}"),
        }
    });
}
