//! The contract of [`IdempotencyStore`], as scenarios every store must pass.
//!
//! A store joins with one line in a test file of its crate, naming how to open a fresh,
//! empty store for a [`Setup`]; each scenario becomes a `#[test]` of its own:
//!
//! ```
//! use carmy_core::{MemoryStore, MemoryStoreLimits};
//! use carmy_store::conformance::Setup;
//!
//! carmy_store::conformance_tests!(|setup: Setup| {
//!     MemoryStore::new(
//!         MemoryStoreLimits::default()
//!             .with_max_entries_per_principal(setup.max_entries_per_principal),
//!     )
//! });
//! # fn main() {}
//! ```
//!
//! or runs them all in one test with [`run_all`]. Scenarios use the real clock (a file or a
//! server does not follow tokio's paused time), with leases of a few hundred milliseconds where
//! they need one to run out; each takes about a second at most.
//!
//! A store kept on a server also runs [`fails_closed_while_down`], given an [`Outage`] that
//! takes its server down and brings it back.

use std::{
    future::Future,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    AgentError, Carmy, Claim, Context, Effect, ErrorCategory, ExecutionId, ExecutionStatus,
    Fingerprint, IdempotencyKey, IdempotencyStore, Invocation, Lease, LeaseTerms, Recorded,
    Release, Request, StoreError, Tool, ToolSpec,
};
use serde_json::{Value, json};
use tokio::time::{Instant, sleep, timeout};

/// What a scenario asks of the store it opens.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Setup {
    /// The most keys one principal may hold (the store's `max_entries_per_principal`).
    pub max_entries_per_principal: usize,
    /// An empty directory of the scenario's own, removed when it ends: where a store kept in
    /// files puts them.
    pub dir: PathBuf,
}

/// How a scenario opens a fresh store: the closure given to
/// [`conformance_tests!`](crate::conformance_tests), run on a blocking thread (opening a file or
/// a connection may block).
pub struct Opener<S> {
    open: Arc<dyn Fn(Setup) -> S + Send + Sync>,
    dir: PathBuf,
}

impl<S> Clone for Opener<S> {
    fn clone(&self) -> Self {
        Self {
            open: Arc::clone(&self.open),
            dir: self.dir.clone(),
        }
    }
}

impl<S> std::fmt::Debug for Opener<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opener").field("dir", &self.dir).finish()
    }
}

impl<S: IdempotencyStore> Opener<S> {
    /// A fresh store with the default bounds.
    pub async fn open(&self) -> Arc<S> {
        self.open_with(10_000).await
    }

    /// A fresh store holding at most `max_entries_per_principal` keys per principal.
    pub async fn open_with(&self, max_entries_per_principal: usize) -> Arc<S> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = self
            .dir
            .join(format!("store-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).expect("a scratch directory for the store");
        let setup = Setup {
            max_entries_per_principal,
            dir,
        };
        let open = Arc::clone(&self.open);
        let store = tokio::task::spawn_blocking(move || open(setup))
            .await
            .expect("opening the store panicked");
        Arc::new(store)
    }
}

/// Removes a scenario's scratch directory, even when it fails.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one scenario against stores opened by `open`, on a runtime of its own.
pub fn check<S, F, Fut>(name: &str, open: F, scenario: impl FnOnce(Opener<S>) -> Fut)
where
    S: IdempotencyStore,
    F: Fn(Setup) -> S + Send + Sync + 'static,
    Fut: Future<Output = ()>,
{
    let dir = std::env::temp_dir().join(format!(
        "carmy-conformance-{}-{name}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let _scratch = Scratch(dir.clone());
    let opener = Opener {
        open: Arc::new(open),
        dir,
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(scenario(opener));
}

/// Every scenario, one after the other, against stores opened by `open`.
pub fn run_all<S, F>(open: F)
where
    S: IdempotencyStore,
    F: Fn(Setup) -> S + Clone + Send + Sync + 'static,
{
    macro_rules! all {
        ($($name:ident),* $(,)?) => {
            $( check(stringify!($name), open.clone(), $name); )*
        };
    }
    all!(
        replay,
        conflict,
        wait_then_replay,
        released_claim_runs_again,
        uncertain_after_lost_write_lease,
        retry_after_lost_read_lease,
        lease_expiry_wakes_waiters,
        late_holder_gets_lease_lost,
        capacity_fails_closed,
        a_full_share_refuses_new_writes_only,
        concurrent_claims_one_winner,
        nothing_runs_twice,
        principals_never_meet,
    );
}

/// One `#[test]` per scenario of the [`conformance`](crate::conformance) suite, for the store
/// the closure opens (`Fn(Setup) -> impl IdempotencyStore`).
///
/// A store kept on a server that a machine may lack adds `when = EXPR`: each test evaluates
/// `EXPR` first and, unless it is `true`, returns without running (say why where `EXPR` is
/// decided: a skipped test passes silently).
///
/// ```
/// # use carmy_core::{MemoryStore, MemoryStoreLimits};
/// # fn server_is_installed() -> bool { true }
/// carmy_store::conformance_tests!(
///     |_setup: carmy_store::conformance::Setup| MemoryStore::new(MemoryStoreLimits::default()),
///     when = server_is_installed()
/// );
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($open:expr $(,)?) => {
        $crate::conformance_tests!($open, when = true);
    };
    ($open:expr, when = $available:expr $(,)?) => {
        $crate::__conformance_tests!(
            $open, $available;
            replay,
            conflict,
            wait_then_replay,
            released_claim_runs_again,
            uncertain_after_lost_write_lease,
            retry_after_lost_read_lease,
            lease_expiry_wakes_waiters,
            late_holder_gets_lease_lost,
            capacity_fails_closed,
            a_full_share_refuses_new_writes_only,
            concurrent_claims_one_winner,
            nothing_runs_twice,
            principals_never_meet,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    ($open:expr, $available:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                if !$available {
                    return;
                }
                $crate::conformance::check(
                    ::core::stringify!($name),
                    $open,
                    $crate::conformance::$name,
                );
            }
        )*
    };
}

/// A lease no scenario outlives unless it means to.
const LONG: Duration = Duration::from_secs(60);
/// A lease a scenario waits out.
const SHORT: Duration = Duration::from_millis(300);
/// How long a waiter may take to notice what it waits for.
const NOTICE: Duration = Duration::from_secs(3);

fn write(duration: Duration) -> LeaseTerms {
    LeaseTerms {
        duration,
        if_lost: Release::Uncertain(ExecutionStatus::Lost),
    }
}

fn read(duration: Duration) -> LeaseTerms {
    LeaseTerms {
        duration,
        if_lost: Release::Retry,
    }
}

fn fingerprint(n: u32) -> Fingerprint {
    Fingerprint::of("place_order", &json!({ "n": n }))
}

fn key(principal: &str, request_id: &str) -> IdempotencyKey {
    IdempotencyKey::new(Some(principal), request_id)
}

fn succeeded(id: &str) -> Recorded {
    Recorded::new(
        ExecutionId::from(id),
        ExecutionStatus::Succeeded,
        Ok(json!({ "order": id, "total": 12.5, "lines": [1, 2, 3] })),
    )
}

async fn claim<S: IdempotencyStore>(
    store: &S,
    key: &IdempotencyKey,
    fingerprint: Fingerprint,
    terms: LeaseTerms,
) -> Claim {
    match timeout(NOTICE, store.claim(key, fingerprint, terms)).await {
        Ok(Ok(claim)) => claim,
        Ok(Err(error)) => panic!("claiming {key:?} failed: {error}"),
        Err(_) => panic!("claiming {key:?} took more than {NOTICE:?}"),
    }
}

async fn acquire<S: IdempotencyStore>(
    store: &S,
    key: &IdempotencyKey,
    fingerprint: Fingerprint,
    terms: LeaseTerms,
) -> Lease {
    match claim(store, key, fingerprint, terms).await {
        Claim::Acquired(lease) => lease,
        other => panic!("expected to acquire {key:?}, got {other:?}"),
    }
}

async fn finished<S: IdempotencyStore>(
    store: &S,
    key: &IdempotencyKey,
    fp: Fingerprint,
) -> Recorded {
    match claim(store, key, fp, write(LONG)).await {
        Claim::Finished(recorded) => recorded,
        other => panic!("expected {key:?} to be finished, got {other:?}"),
    }
}

async fn running<S: IdempotencyStore>(
    store: &S,
    key: &IdempotencyKey,
    fp: Fingerprint,
    terms: LeaseTerms,
) -> carmy_core::Waiter {
    match claim(store, key, fp, terms).await {
        Claim::Running(waiter) => waiter,
        other => panic!("expected {key:?} to be running, got {other:?}"),
    }
}

/// A finished key replays its outcome, exactly as recorded (an error's every field, too), to
/// every retry.
pub async fn replay<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let outcomes = [
        succeeded("exec_ok"),
        Recorded::new(
            ExecutionId::from("exec_failed"),
            ExecutionStatus::Failed,
            Err(
                AgentError::new(ErrorCategory::Unavailable, "PAYMENTS_DOWN", "later")
                    .with_retryable(false)
                    .with_details(json!({ "retry_after_s": 3, "ratio": 0.1 }))
                    .with_next_tool("get_order"),
            ),
        ),
        Recorded::new(
            ExecutionId::from("exec_null"),
            ExecutionStatus::Failed,
            Err(AgentError::conflict("OUT_OF_STOCK", "none left").with_details(json!(null))),
        ),
        Recorded::new(
            ExecutionId::from("exec_nothing"),
            ExecutionStatus::Succeeded,
            Ok(json!(null)),
        ),
    ];
    for (n, outcome) in outcomes.into_iter().enumerate() {
        let key = key("alice", &format!("replay-{n}"));
        let lease = acquire(&*store, &key, fingerprint(1), write(LONG)).await;
        store.finish(&lease, outcome.clone()).await.unwrap();
        for _ in 0..3 {
            assert_eq!(finished(&*store, &key, fingerprint(1)).await, outcome);
        }
    }
}

/// The same request id with another fingerprint is a conflict, whatever became of the first.
pub async fn conflict<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let held = key("alice", "conflict-held");
    let lease = acquire(&*store, &held, fingerprint(1), write(LONG)).await;
    assert!(matches!(
        claim(&*store, &held, fingerprint(2), write(LONG)).await,
        Claim::Conflict
    ));
    store.finish(&lease, succeeded("exec_1")).await.unwrap();
    assert!(matches!(
        claim(&*store, &held, fingerprint(2), write(LONG)).await,
        Claim::Conflict
    ));
    assert_eq!(
        finished(&*store, &held, fingerprint(1)).await,
        succeeded("exec_1")
    );

    let uncertain = key("alice", "conflict-uncertain");
    let lease = acquire(&*store, &uncertain, fingerprint(1), write(LONG)).await;
    store
        .release(&lease, Release::Uncertain(ExecutionStatus::TimedOut))
        .await
        .unwrap();
    assert!(matches!(
        claim(&*store, &uncertain, fingerprint(2), write(LONG)).await,
        Claim::Conflict
    ));
}

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

/// A write whose holder vanished (its lease ran out) is uncertain: it may have committed, so it
/// is not run again. A write released as uncertain says so with its status.
pub async fn uncertain_after_lost_write_lease<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let lost = key("alice", "lost-write");
    acquire(&*store, &lost, fingerprint(1), write(SHORT)).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    for _ in 0..2 {
        assert!(matches!(
            claim(&*store, &lost, fingerprint(1), write(LONG)).await,
            Claim::Uncertain(ExecutionStatus::Lost)
        ));
    }

    let timed_out = key("alice", "timed-out-write");
    let lease = acquire(&*store, &timed_out, fingerprint(1), write(LONG)).await;
    store
        .release(&lease, Release::Uncertain(ExecutionStatus::TimedOut))
        .await
        .unwrap();
    assert!(matches!(
        claim(&*store, &timed_out, fingerprint(1), write(LONG)).await,
        Claim::Uncertain(ExecutionStatus::TimedOut)
    ));
}

/// A read (or an idempotent call) whose holder vanished is forgotten once its lease runs out:
/// the next claim runs it again, under a new lease.
pub async fn retry_after_lost_read_lease<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let key = key("alice", "lost-read");
    let lost = acquire(&*store, &key, fingerprint(1), read(SHORT)).await;
    drop(running(&*store, &key, fingerprint(1), read(SHORT)).await);
    sleep(SHORT + Duration::from_millis(100)).await;
    let again = acquire(&*store, &key, fingerprint(1), read(LONG)).await;
    assert_ne!(lost, again);
    store.finish(&again, succeeded("exec_r")).await.unwrap();
    assert_eq!(
        finished(&*store, &key, fingerprint(1)).await,
        succeeded("exec_r")
    );
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

/// A holder that comes back after its lease ran out and the key moved on gets `LeaseLost`,
/// and changes nothing; a settled lease cannot settle again.
pub async fn late_holder_gets_lease_lost<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let read_key = key("alice", "late-read");
    let late = acquire(&*store, &read_key, fingerprint(1), read(SHORT)).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    let successor = acquire(&*store, &read_key, fingerprint(1), read(LONG)).await;
    assert!(matches!(
        store.finish(&late, succeeded("exec_late")).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.release(&late, Release::Retry).await,
        Err(StoreError::LeaseLost)
    ));
    store
        .finish(&successor, succeeded("exec_successor"))
        .await
        .unwrap();
    assert!(matches!(
        store.finish(&successor, succeeded("exec_again")).await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        finished(&*store, &read_key, fingerprint(1)).await,
        succeeded("exec_successor")
    );

    let write_key = key("alice", "late-write");
    let late = acquire(&*store, &write_key, fingerprint(1), write(SHORT)).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    assert!(matches!(
        claim(&*store, &write_key, fingerprint(1), write(LONG)).await,
        Claim::Uncertain(ExecutionStatus::Lost)
    ));
    assert!(matches!(
        store.finish(&late, succeeded("exec_late")).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        claim(&*store, &write_key, fingerprint(1), write(LONG)).await,
        Claim::Uncertain(ExecutionStatus::Lost)
    ));
}

/// A principal at its bound gets `Full` for new keys, and nothing it holds (finished or running)
/// is forgotten to make room; other principals are not affected.
pub async fn capacity_fails_closed<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open_with(2).await;
    let done = key("alice", "a");
    let lease = acquire(&*store, &done, fingerprint(1), write(LONG)).await;
    store.finish(&lease, succeeded("exec_a")).await.unwrap();
    let held = key("alice", "b");
    acquire(&*store, &held, fingerprint(1), write(LONG)).await;
    for _ in 0..3 {
        match timeout(
            NOTICE,
            store.claim(&key("alice", "c"), fingerprint(1), write(LONG)),
        )
        .await
        {
            Ok(Err(StoreError::Full(_))) => {}
            other => panic!("a full share must fail closed, got {other:?}"),
        }
    }
    assert_eq!(
        finished(&*store, &done, fingerprint(1)).await,
        succeeded("exec_a")
    );
    drop(running(&*store, &held, fingerprint(1), write(LONG)).await);
    acquire(&*store, &key("bob", "c"), fingerprint(1), write(LONG)).await;
}

/// The tools of [`a_full_share_refuses_new_writes_only`]: a write, a read and an idempotent
/// write, each answering with its arguments.
struct Echo<const E: u8>;

const fn echo_spec(effect: u8) -> ToolSpec {
    match effect {
        0 => ToolSpec::new("place_order", Effect::Write),
        1 => ToolSpec::new("find_order", Effect::Read),
        _ => ToolSpec::new("set_address", Effect::Write).idempotent(true),
    }
}

impl<const E: u8> Tool for Echo<E> {
    type Input = serde_json::Map<String, Value>;
    type Output = Value;
    const SPEC: ToolSpec = echo_spec(E);

    async fn run(
        &self,
        input: serde_json::Map<String, Value>,
        _: Invocation,
    ) -> Result<Value, AgentError> {
        Ok(Value::Object(input))
    }
}

/// Through the runtime, a principal past its share meets `CAPACITY` (retryable) for a write
/// under a new request id, and only there: what it holds is still replayed, reads and
/// idempotent tools under fresh ids (which claim nothing) keep running, and another principal
/// has a share of its own.
pub async fn a_full_share_refuses_new_writes_only<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open_with(2).await;
    let runtime = Carmy::new()
        .tool(Echo::<0>)
        .tool(Echo::<1>)
        .tool(Echo::<2>)
        .idempotency_store(store)
        .build()
        .expect("a runtime");
    let call = |principal: &str, tool: &str, id: &str| {
        Request::new(tool, json!({ "id": id }))
            .request_id(id)
            .context(Context::new().with_principal(principal))
    };
    for id in ["w-1", "w-2"] {
        let placed = runtime.execute(call("alice", "place_order", id)).await;
        assert_eq!(placed.status, ExecutionStatus::Succeeded, "{placed:?}");
    }
    let refused = runtime.execute(call("alice", "place_order", "w-3")).await;
    let error = refused.error().expect("a write past the share is refused");
    assert_eq!(
        (
            refused.status,
            error.code(),
            error.category(),
            error.retryable()
        ),
        (
            ExecutionStatus::Rejected,
            "CAPACITY",
            ErrorCategory::Capacity,
            true
        ),
        "{refused:?}"
    );
    let replayed = runtime.execute(call("alice", "place_order", "w-1")).await;
    assert_eq!(replayed.status, ExecutionStatus::Replayed, "{replayed:?}");
    for n in 0..5 {
        for tool in ["find_order", "set_address"] {
            let outcome = runtime
                .execute(call("alice", tool, &format!("{tool}-{n}")))
                .await;
            assert_eq!(outcome.status, ExecutionStatus::Succeeded, "{outcome:?}");
        }
    }
    let bob = runtime.execute(call("bob", "place_order", "w-3")).await;
    assert_eq!(bob.status, ExecutionStatus::Succeeded, "{bob:?}");
}

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

/// One request id, several principals: several keys. Neither a claim, an outcome nor a
/// conflict crosses from one principal to another, however the parts could be joined.
pub async fn principals_never_meet<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let alice = key("alice", "r1");
    let lease = acquire(&*store, &alice, fingerprint(1), write(LONG)).await;
    store.finish(&lease, succeeded("exec_alice")).await.unwrap();
    // Another principal, another fingerprint: no conflict, a claim of its own.
    let bob = acquire(&*store, &key("bob", "r1"), fingerprint(2), write(LONG)).await;
    let anonymous = IdempotencyKey::new(None, "r1");
    acquire(&*store, &anonymous, fingerprint(3), write(LONG)).await;
    store.finish(&bob, succeeded("exec_bob")).await.unwrap();
    assert_eq!(
        finished(&*store, &alice, fingerprint(1)).await,
        succeeded("exec_alice")
    );
    assert_eq!(
        finished(&*store, &key("bob", "r1"), fingerprint(2)).await,
        succeeded("exec_bob")
    );
    // Keys whose parts would join into the same text are still two keys.
    for (principal, request_id) in [("a", "b:c"), ("a:b", "c"), ("a\0b", "c"), ("a", "b\0c")] {
        acquire(
            &*store,
            &key(principal, request_id),
            fingerprint(1),
            write(LONG),
        )
        .await;
    }
}

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
