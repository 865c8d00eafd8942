//! The in-memory idempotency store under contention (one mutex around the maps): fresh
//! claims that run and record, and replays of finished keys, from 1, 2 and 4 threads on
//! this 2-core machine. Its futures never wait, so each is polled once (`now_or_never`).

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use carmy_bench::catalog::{self, SearchInput};
use std::time::Duration;

use carmy_core::{
    Claim, ExecutionId, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore, LeaseTerms,
    MemoryStore, MemoryStoreLimits, Recorded, Release,
};
use divan::{Bencher, black_box};
use futures_util::FutureExt;
use serde_json::{Value, json};

/// Keys kept finished for the replay benchmark.
const KEYS: u64 = 1_000;

fn recorded() -> Recorded {
    let output = catalog::search(&SearchInput {
        query: "mouse".into(),
        limit: None,
        category: None,
    });
    Recorded::new(
        ExecutionId::generate(),
        ExecutionStatus::Succeeded,
        Ok(serde_json::to_value(output).unwrap()),
    )
}

/// The terms the runtime asks for a write with the default 60 s timeout.
const TERMS: LeaseTerms = LeaseTerms {
    duration: Duration::from_secs(150),
    if_lost: Release::Uncertain(ExecutionStatus::Lost),
};

/// The answer of a store future that completes at once.
fn now<T>(future: impl std::future::Future<Output = T>) -> T {
    future.now_or_never().expect("the memory store never waits")
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
        match now(store.claim(&key, fingerprint, TERMS)).unwrap() {
            Claim::Acquired(lease) => now(store.finish(&lease, recorded.clone())).unwrap(),
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
        let Ok(Claim::Acquired(lease)) = now(store.claim(key, fingerprint, TERMS)) else {
            panic!("a fresh key was not acquired");
        };
        now(store.finish(&lease, recorded())).unwrap();
    }
    let next = AtomicU64::new(0);
    bencher.bench(|| {
        let key = &keys[(next.fetch_add(1, Ordering::Relaxed) % KEYS) as usize];
        match now(store.claim(black_box(key), fingerprint, TERMS)).unwrap() {
            Claim::Finished(recorded) => black_box::<Value>(recorded.result.unwrap()),
            other => panic!("a finished key was {other:?}"),
        }
    });
}
