//! The idempotency store as the runtime uses it: what it is asked, and what happens when it
//! cannot answer. (The in-memory store's own rules are its unit tests.)

use crate::common;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use carmy_core::{
    Claim, ErrorCategory, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore, Lease,
    LeaseTerms, MemoryStore, Recorded, Release, Request, StoreError,
};
use common::Shop;
use serde_json::json;

/// A memory store that remembers the terms of every claim, and can be made to fail.
#[derive(Default)]
struct Watched {
    store: MemoryStore,
    terms: Mutex<Vec<LeaseTerms>>,
    fail_claims: Option<fn() -> StoreError>,
    fail_finish: bool,
}

impl IdempotencyStore for Watched {
    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> Result<Claim, StoreError> {
        if let Some(error) = self.fail_claims {
            return Err(error());
        }
        self.terms.lock().unwrap().push(terms);
        self.store.claim(key, fingerprint, terms).await
    }

    async fn finish(&self, lease: &Lease, recorded: Recorded) -> Result<(), StoreError> {
        if self.fail_finish {
            return Err(StoreError::unavailable("connection reset"));
        }
        self.store.finish(lease, recorded).await
    }

    async fn release(&self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        self.store.release(lease, release).await
    }
}

fn place(order: &str) -> Request {
    Request::new("place_order", json!({ "order_id": order }))
}

#[tokio::test]
async fn a_store_that_cannot_answer_fails_the_call_closed() {
    let shop = Shop::new();
    let store = Watched {
        fail_claims: Some(|| StoreError::unavailable("connection refused")),
        ..Watched::default()
    };
    let runtime = shop.carmy().idempotency_store(store).build().unwrap();
    let outcome = runtime.execute(place("ord-1").request_id("r-1")).await;
    assert_eq!(outcome.status, ExecutionStatus::Rejected);
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), "STORE_UNAVAILABLE");
    assert_eq!(error.category(), ErrorCategory::Unavailable);
    assert!(error.retryable());
    assert!(
        !error.message().contains("connection refused"),
        "the store's own words stay in the log"
    );
    assert_eq!(shop.places.started(), 0);
    // Calls without a request id do not touch the store, nor do reads with one.
    let outcome = runtime.execute(place("ord-2")).await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    let read = Request::new("get_order", json!({ "order_id": "ord-2" })).request_id("r-2");
    let outcome = runtime.execute(read).await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded, "{outcome:?}");
    assert_eq!(shop.gets.started(), 1);
}

#[tokio::test]
async fn a_full_store_answers_capacity() {
    let shop = Shop::new();
    let store = Watched {
        fail_claims: Some(|| StoreError::Full("every key is held".into())),
        ..Watched::default()
    };
    let runtime = shop.carmy().idempotency_store(store).build().unwrap();
    let outcome = runtime.execute(place("ord-1").request_id("r-1")).await;
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), "CAPACITY");
    assert!(error.retryable());
    assert_eq!(shop.places.started(), 0);
}

#[tokio::test]
async fn an_outcome_the_store_cannot_keep_is_still_answered() {
    let shop = Shop::new();
    let store = Watched {
        fail_finish: true,
        ..Watched::default()
    };
    let runtime = shop.carmy().idempotency_store(store).build().unwrap();
    let outcome = runtime.execute(place("ord-1").request_id("r-1")).await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    assert_eq!(outcome.unwrap_output::<String>(), "ord-1");
}

#[tokio::test]
async fn claims_outlive_the_execution_and_say_what_a_lost_one_means() {
    let shop = Shop::new();
    let store = Arc::new(Watched::default());
    let runtime = shop
        .carmy()
        .idempotency_store(Arc::clone(&store))
        .build()
        .unwrap();
    runtime.execute(place("ord-1").request_id("w")).await;
    runtime
        .execute(Request::new("get_order", json!({ "order_id": "ord-1" })).request_id("r"))
        .await;
    let terms = store.terms.lock().unwrap().clone();
    // A write that may have committed is uncertain if its holder vanishes; a read claims
    // nothing (it runs again on every retry).
    assert_eq!(terms.len(), 1, "{terms:?}");
    assert_eq!(terms[0].if_lost, Release::Uncertain(ExecutionStatus::Lost));
    // The tool has a 500 ms timeout: waiting for a turn, then running, fit in the lease.
    assert!(terms[0].duration >= Duration::from_secs(1), "{terms:?}");
}
