//! A transactional call under a request id the store has not seen runs unclaimed, and one
//! commit records the request id with its writes and outcome; a duplicate that commits first
//! is replayed by the other, whose run is set aside; a store that records no request id with a
//! commit keeps every call on the claim path. Exactly once, either way.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy::{
    Runtime,
    execution::{ExecutionStatus, Request},
    prelude::*,
    records::{Changes, Committed, Listing, RecordKey, RecordStore, UnclaimedCommit, Versioned},
    store::{
        Claim, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, LeaseTerms, MemoryStore,
        Recorded, Release, StoreError,
    },
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Notify;

#[derive(Debug, Deserialize, JsonSchema)]
struct Entry {
    id: String,
}

/// Holds the first run of `journal` until released, so a duplicate can overtake it.
#[derive(Default)]
struct Gate {
    first_taken: AtomicBool,
    entered: Notify,
    release: Notify,
    runs: AtomicUsize,
}

/// Writes one journal entry, keyed by the execution that wrote it. Parallel-safe, so a
/// duplicate does not wait for its turn behind the first.
#[tool(effect = "write", transactional, parallel_safe = true)]
async fn journal(
    input: Entry,
    gate: State<Arc<Gate>>,
    ctx: &Context,
) -> Result<String, AgentError> {
    gate.runs.fetch_add(1, Ordering::SeqCst);
    let execution = ctx.execution_id().unwrap().to_string();
    ctx.records().put("journal", &execution, &input.id)?;
    if !gate.first_taken.swap(true, Ordering::SeqCst) {
        gate.entered.notify_one();
        gate.release.notified().await;
    }
    Ok(execution)
}

/// A `MemoryStore` that counts what the runtime asks of it, and may decline to record request
/// ids with commits (the trait's defaults, as a store that has not adopted them answers).
struct Counting {
    inner: MemoryStore,
    records_request_ids: bool,
    claims: AtomicUsize,
    commits: AtomicUsize,
    unclaimed_commits: AtomicUsize,
}

impl Counting {
    fn new(records_request_ids: bool) -> Arc<Self> {
        Arc::new(Self {
            inner: MemoryStore::default(),
            records_request_ids,
            claims: AtomicUsize::new(0),
            commits: AtomicUsize::new(0),
            unclaimed_commits: AtomicUsize::new(0),
        })
    }

    fn counts(&self) -> (usize, usize, usize) {
        (
            self.claims.load(Ordering::SeqCst),
            self.commits.load(Ordering::SeqCst),
            self.unclaimed_commits.load(Ordering::SeqCst),
        )
    }
}

impl IdempotencyStore for Counting {
    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> Result<Claim, StoreError> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        self.inner.claim(key, fingerprint, terms).await
    }

    async fn finish(&self, lease: &Lease, recorded: Recorded) -> Result<(), StoreError> {
        self.inner.finish(lease, recorded).await
    }

    async fn release(&self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        self.inner.release(lease, release).await
    }
}

impl RecordStore for Counting {
    async fn read(&self, key: &RecordKey) -> Result<Versioned, StoreError> {
        self.inner.read(key).await
    }

    async fn list(&self, collection: &str) -> Result<Listing, StoreError> {
        self.inner.list(collection).await
    }

    async fn commit(
        &self,
        changes: &Changes,
        outcome: Option<(&Lease, &Recorded)>,
    ) -> Result<Committed, StoreError> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.inner.commit(changes, outcome).await
    }

    async fn unclaimed(&self, key: &IdempotencyKey) -> Result<bool, StoreError> {
        if !self.records_request_ids {
            return Ok(false);
        }
        self.inner.unclaimed(key).await
    }

    async fn commit_unclaimed(
        &self,
        changes: &Changes,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &Recorded,
    ) -> Result<UnclaimedCommit, StoreError> {
        self.unclaimed_commits.fetch_add(1, Ordering::SeqCst);
        self.inner
            .commit_unclaimed(changes, key, fingerprint, recorded)
            .await
    }
}

fn runtime(store: Arc<Counting>, gate: Arc<Gate>) -> Runtime {
    Carmy::new()
        .tool(journal)
        .state(gate)
        .store(store)
        .build()
        .unwrap()
}

fn request(id: &str) -> Request {
    Request::new("journal", json!({ "id": id })).request_id(id)
}

async fn journal_len(store: &Counting) -> usize {
    store.inner.list("journal").await.unwrap().records.len()
}

/// Opens the gate at once: no run waits.
fn open_gate() -> Arc<Gate> {
    let gate = Gate::default();
    gate.first_taken.store(true, Ordering::SeqCst);
    Arc::new(gate)
}

#[tokio::test]
async fn a_new_request_id_costs_one_commit_and_its_retry_replays_without_running() {
    let store = Counting::new(true);
    let gate = open_gate();
    let runtime = runtime(Arc::clone(&store), Arc::clone(&gate));
    let first = runtime.execute(request("j-1")).await;
    assert_eq!(first.status, ExecutionStatus::Succeeded, "{first:?}");
    assert_eq!(store.counts(), (0, 0, 1), "no claim, one commit");
    let retry = runtime.execute(request("j-1")).await;
    assert_eq!(retry.status, ExecutionStatus::Replayed);
    assert_eq!(retry.execution_id, first.execution_id);
    assert_eq!(
        store.counts(),
        (1, 0, 1),
        "the retry is replayed by its claim"
    );
    assert_eq!(gate.runs.load(Ordering::SeqCst), 1, "the tool ran once");
    assert_eq!(journal_len(&store).await, 1);
    let record = runtime.execution(&first.execution_id).unwrap();
    assert_eq!(record.status, ExecutionStatus::Succeeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_that_commits_first_is_replayed_by_the_overtaken_call() {
    let store = Counting::new(true);
    let gate = Arc::new(Gate::default());
    let runtime = runtime(Arc::clone(&store), Arc::clone(&gate));
    let entered = gate.entered.notified();
    let overtaken = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.execute(request("j-2")).await }
    });
    entered.await;
    // The first call is in its tool, unclaimed: the duplicate runs too, and commits first.
    let winner = runtime.execute(request("j-2")).await;
    assert_eq!(winner.status, ExecutionStatus::Succeeded, "{winner:?}");
    gate.release.notify_one();
    let replayed = tokio::time::timeout(Duration::from_secs(5), overtaken)
        .await
        .expect("the overtaken call ends")
        .unwrap();
    assert_eq!(replayed.status, ExecutionStatus::Replayed, "{replayed:?}");
    assert_eq!(replayed.execution_id, winner.execution_id);
    assert_eq!(replayed.result, winner.result);
    assert_eq!(
        gate.runs.load(Ordering::SeqCst),
        2,
        "both ran; one committed"
    );
    assert_eq!(
        journal_len(&store).await,
        1,
        "the set-aside run wrote nothing"
    );
    assert_eq!(runtime.running_executions(), 0);
}

#[tokio::test]
async fn a_store_that_records_no_request_id_with_a_commit_claims_first() {
    let store = Counting::new(false);
    let runtime = runtime(Arc::clone(&store), open_gate());
    let first = runtime.execute(request("j-3")).await;
    assert_eq!(first.status, ExecutionStatus::Succeeded, "{first:?}");
    assert_eq!(
        store.counts(),
        (1, 1, 0),
        "a claim, then a commit under its lease"
    );
    let retry = runtime.execute(request("j-3")).await;
    assert_eq!(retry.status, ExecutionStatus::Replayed);
    assert_eq!(retry.execution_id, first.execution_id);
    assert_eq!(journal_len(&store).await, 1);
}
