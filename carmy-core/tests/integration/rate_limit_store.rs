//! Rate limits kept in a store: runtimes sharing one share each tool's limit, a tool without a
//! limit never asks it, and a store that cannot answer leaves each runtime to its own buckets
//! rather than refusing every call or lifting the limit.

use crate::common;

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use carmy_core::{
    Context, ExecutionStatus, RateLimit, RateLimitStore, Request, Runtime, StoreError,
};
use common::Shop;
use serde_json::json;

/// The buckets replicas would share on a server, kept here: GCRA on one clock, counting the
/// takes it answered. `failing` makes it answer none.
#[derive(Default)]
struct Buckets {
    tats: Mutex<std::collections::HashMap<(String, Option<String>), Instant>>,
    takes: AtomicUsize,
    failing: std::sync::atomic::AtomicBool,
}

impl RateLimitStore for Buckets {
    async fn take(
        &self,
        tool: &str,
        principal: Option<&str>,
        limit: RateLimit,
    ) -> Result<Result<(), Duration>, StoreError> {
        self.takes.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("the test's store is down"));
        }
        let interval = limit.emission_interval().expect("limited");
        let tolerance = limit.tolerance().expect("limited");
        let now = Instant::now();
        let mut tats = self.tats.lock().unwrap();
        let tat = tats
            .entry((tool.to_owned(), principal.map(str::to_owned)))
            .or_insert(now);
        let earliest = tat.checked_sub(tolerance).unwrap_or(now);
        if earliest > now {
            return Ok(Err(earliest - now));
        }
        *tat = (*tat).max(now) + interval;
        Ok(Ok(()))
    }
}

fn get(order: &str, principal: &str) -> Request {
    Request::new("get_order", json!({ "order_id": order }))
        .context(Context::new().with_principal(principal))
}

/// Three runtimes (replicas) of one shop, all on `store`, with `limit` for every tool.
fn replicas(shop: &Shop, store: &Arc<Buckets>, limit: RateLimit) -> Vec<Runtime> {
    (0..3)
        .map(|_| {
            shop.carmy()
                .rate_limit(limit)
                .rate_limit_store(Arc::clone(store))
                .build()
                .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn runtimes_sharing_a_store_share_the_limit() {
    let shop = Shop::new();
    let store = Arc::new(Buckets::default());
    let runtimes = replicas(&shop, &store, RateLimit::per_hour(60).burst(5));
    let mut codes = Vec::new();
    for i in 0..15 {
        let outcome = runtimes[i % 3].execute(get("ord-1", "alice")).await;
        codes.push(match outcome.error() {
            None => "ok".to_owned(),
            Some(error) => {
                let details = error.details().unwrap();
                assert!(details["retry_after_ms"].as_u64().unwrap() > 0);
                assert_eq!(details["burst"], 5);
                error.code().to_owned()
            }
        });
    }
    assert_eq!(codes.iter().filter(|code| *code == "ok").count(), 5);
    assert_eq!(
        codes.iter().filter(|code| *code == "RATE_LIMITED").count(),
        10
    );
    assert_eq!(&codes[..5], ["ok"; 5], "the burst first");
    assert_eq!(shop.gets.started(), 5, "refused calls never ran");
    assert_eq!(store.takes.load(Ordering::SeqCst), 15);
    // Bob's bucket is his own, on every replica.
    assert!(runtimes[1].execute(get("ord-1", "bob")).await.is_ok());
}

#[tokio::test]
async fn a_refusal_by_the_store_is_recorded_as_rejected() {
    let shop = Shop::new();
    let store = Arc::new(Buckets::default());
    let runtimes = replicas(&shop, &store, RateLimit::per_hour(1).burst(1));
    assert!(runtimes[0].execute(get("ord-1", "alice")).await.is_ok());
    let refused = runtimes[1].execute(get("ord-1", "alice")).await;
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    let error = refused.error().unwrap();
    assert_eq!(error.code(), "RATE_LIMITED");
    assert!(error.retryable());
    let wait = error.details().unwrap()["retry_after_ms"].as_u64().unwrap();
    assert!(wait > 3_590_000 && wait <= 3_600_000, "{wait}");
    let record = runtimes[1].execution(&refused.execution_id).unwrap();
    assert_eq!(record.error_code.as_deref(), Some("RATE_LIMITED"));
}

#[tokio::test]
async fn a_tool_without_a_limit_never_asks_the_store() {
    let shop = Shop::new();
    let store = Arc::new(Buckets::default());
    let runtime = shop
        .carmy()
        .rate_limit_store(Arc::clone(&store))
        .build()
        .unwrap();
    for i in 0..20 {
        assert!(
            runtime
                .execute(get(&format!("ord-{i}"), "alice"))
                .await
                .is_ok()
        );
    }
    assert_eq!(store.takes.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_store_that_cannot_answer_leaves_each_runtime_to_its_own_buckets() {
    let shop = Shop::new();
    let store = Arc::new(Buckets::default());
    store.failing.store(true, Ordering::SeqCst);
    let runtimes = replicas(&shop, &store, RateLimit::per_hour(60).burst(2));
    // Neither refused outright nor unlimited: each replica allows its own burst of 2.
    let mut admitted = [0; 3];
    for i in 0..15 {
        if runtimes[i % 3].execute(get("ord-1", "alice")).await.is_ok() {
            admitted[i % 3] += 1;
        }
    }
    assert_eq!(admitted, [2, 2, 2]);
    assert_eq!(
        store.takes.load(Ordering::SeqCst),
        15,
        "each call asked it first"
    );
    let refused = runtimes[0].execute(get("ord-1", "alice")).await;
    assert_eq!(refused.unwrap_error_code(), "RATE_LIMITED");
    // Back, the store's buckets decide again: alice's there is untouched, so full.
    store.failing.store(false, Ordering::SeqCst);
    for runtime in &runtimes[..2] {
        assert!(runtime.execute(get("ord-1", "alice")).await.is_ok());
    }
    assert_eq!(
        runtimes[2]
            .execute(get("ord-1", "alice"))
            .await
            .unwrap_error_code(),
        "RATE_LIMITED"
    );
}
