//! What the Redis store promises beyond the shared contract, on real servers: failing closed
//! while Redis is down or hung and serving again by itself, replicas sharing keys, a dead
//! replica's leases settled by their terms, a TTL on every key, retention, bounds whose counts
//! stay right as Redis expires keys on its own, the persistence read at connect.
//!
//! Tests that crash, hang or reconfigure their server start one of their own; the others share
//! the process's server, each under a key prefix of its own. Every test returns at once (and
//! passes) where Redis is not installed, unless `CARMY_TEST_SERVERS=required`.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use carmy_core::{
    Claim, ExecutionId, ExecutionStatus, Fingerprint, IdempotencyKey, IdempotencyStore, Lease,
    LeaseTerms, Recorded, Release, StoreError,
};
use carmy_store::{
    Durability, RedisStore, RedisStoreOptions,
    conformance::{self, Outage},
};
use redis::aio::MultiplexedConnection;
use serde_json::json;
use test_servers::Redis;
use tokio::time::{Instant, sleep, timeout};

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_millis(300);

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

fn fp() -> Fingerprint {
    Fingerprint::of("place_order", &json!({ "sku": "MOUSE-1" }))
}

fn key(principal: &str, id: &str) -> IdempotencyKey {
    IdempotencyKey::new(Some(principal), id)
}

fn recorded(id: &str) -> Recorded {
    Recorded::new(
        ExecutionId::from(id),
        ExecutionStatus::Succeeded,
        Ok(json!({ "order": id })),
    )
}

/// A prefix no other test uses.
fn prefix(test: &str) -> String {
    format!("{test}-{}:", uuid::Uuid::new_v4().simple())
}

/// Options for `test` on a shared server: a prefix of its own, and short timeouts.
fn options(test: &str) -> RedisStoreOptions {
    RedisStoreOptions::default()
        .with_prefix(prefix(test))
        .with_connect_timeout(Duration::from_secs(1))
        .with_response_timeout(Duration::from_secs(1))
}

async fn open(server: &Redis, options: RedisStoreOptions) -> RedisStore {
    RedisStore::connect_with(&server.url(), options)
        .await
        .expect("a store on the test Redis")
}

/// A plain connection, to look at what the store wrote (waiting for answers as long as they
/// take).
async fn raw(server: &Redis) -> MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new().set_response_timeout(None),
        )
        .await
        .unwrap()
}

async fn claim(store: &RedisStore, key: &IdempotencyKey, terms: LeaseTerms) -> Claim {
    match timeout(Duration::from_secs(5), store.claim(key, fp(), terms)).await {
        Ok(Ok(claim)) => claim,
        other => panic!("claiming {key:?}: {other:?}"),
    }
}

async fn acquire(store: &RedisStore, key: &IdempotencyKey, terms: LeaseTerms) -> Lease {
    match claim(store, key, terms).await {
        Claim::Acquired(lease) => lease,
        other => panic!("expected to acquire {key:?}, got {other:?}"),
    }
}

/// Every key under `prefix`, with its PTTL.
async fn keys_and_ttls(connection: &mut MultiplexedConnection, prefix: &str) -> Vec<(String, i64)> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(connection)
        .await
        .unwrap();
    let mut found = Vec::new();
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(connection)
            .await
            .unwrap();
        found.push((key, ttl));
    }
    found.sort();
    found
}

struct Crash(Arc<Redis>);

impl Outage for Crash {
    fn take_down(&self) {
        self.0.crash();
    }

    fn bring_back(&self) {
        self.0.restart();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fails_closed_while_down_and_serves_again_by_itself() {
    let Some(server) = Redis::start() else {
        return;
    };
    let server = Arc::new(server);
    let store = Arc::new(open(&server, options("outage")).await);
    conformance::fails_closed_while_down(store, Crash(server)).await;
}

/// A server busy in a long script answers nobody: the store's calls fail closed within the
/// response timeout instead of waiting, and it serves again once the server does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_server_fails_closed_within_the_response_timeout() {
    let Some(server) = Redis::start() else {
        return;
    };
    let patience = Duration::from_millis(300);
    let store = open(
        &server,
        options("hung")
            .with_connect_timeout(patience)
            .with_response_timeout(patience),
    )
    .await;
    let lease = acquire(&store, &key("alice", "before"), write(LONG)).await;
    let mut busy = raw(&server).await;
    let hang = tokio::spawn(async move {
        // Two seconds of Redis's single thread (less than its busy-reply threshold of 5 s, so
        // other clients simply wait, as behind any slow command).
        let _: i64 = redis::cmd("EVAL")
            .arg(
                "local start = tonumber(redis.call('TIME')[1]) \
                 while tonumber(redis.call('TIME')[1]) - start < 2 do end return 1",
            )
            .arg(0)
            .query_async(&mut busy)
            .await
            .unwrap();
    });
    sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    assert!(matches!(
        store
            .claim(&key("alice", "during"), fp(), write(LONG))
            .await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.finish(&lease, recorded("exec_during")).await,
        Err(StoreError::Unavailable(_))
    ));
    // The first times out waiting for its answer; the second, on a fresh connection, waits
    // for the handshake at most as long.
    // The first times out waiting for its answer; the second, on a fresh connection, waits
    // for the handshake at most as long.
    let waited = started.elapsed();
    assert!(
        waited < patience * 4,
        "two calls to a hung server took {waited:?}"
    );
    hang.await.unwrap();
    store.finish(&lease, recorded("exec_after")).await.unwrap();
    acquire(&store, &key("alice", "after"), write(LONG)).await;
}

/// A connection Redis closed while it was idle (its `timeout`, a proxy, a restart between
/// calls) costs the next call nothing: it is sent again on a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_closed_while_idle_is_replaced_unseen() {
    let Some(server) = Redis::start() else {
        return;
    };
    let store = open(&server, options("idle")).await;
    let lease = acquire(&store, &key("alice", "k"), write(LONG)).await;
    let mut admin = raw(&server).await;
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .query_async(&mut admin)
        .await
        .unwrap();
    assert!(killed >= 1, "the store's connection was not there to close");
    sleep(Duration::from_millis(50)).await;
    store.finish(&lease, recorded("exec_k")).await.unwrap();
    match claim(&store, &key("alice", "k"), write(LONG)).await {
        Claim::Finished(outcome) => assert_eq!(outcome, recorded("exec_k")),
        other => panic!("{other:?}"),
    }
}

/// Several stores on one server and prefix, as replicas of one service are: each key's call
/// runs once, whichever replica its retries reach, and every retry gets that run's outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sharing_a_server_run_each_call_once() {
    const REPLICAS: usize = 4;
    const KEYS: usize = 12;
    const RETRIES: usize = 3;
    let Some(server) = Redis::shared() else {
        return;
    };
    let options = options("replicas");
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        replicas.push(Arc::new(open(server, options.clone()).await));
    }
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let start = Arc::new(tokio::sync::Barrier::new(REPLICAS * KEYS * RETRIES));
    let mut calls = Vec::new();
    for (replica, store) in replicas.iter().enumerate() {
        for n in 0..KEYS {
            for retry in 0..RETRIES {
                let (store, runs, start) =
                    (Arc::clone(store), Arc::clone(&runs), Arc::clone(&start));
                calls.push(tokio::spawn(async move {
                    let key = key("alice", &format!("order-{n}"));
                    start.wait().await;
                    loop {
                        match claim(&store, &key, write(LONG)).await {
                            Claim::Acquired(lease) => {
                                runs[n].fetch_add(1, Ordering::SeqCst);
                                sleep(Duration::from_millis(20)).await;
                                let id = format!("exec_{n}_{replica}_{retry}");
                                store.finish(&lease, recorded(&id)).await.unwrap();
                                return (n, id);
                            }
                            Claim::Finished(outcome) => {
                                return (n, outcome.execution_id.to_string());
                            }
                            Claim::Running(waiter) => timeout(Duration::from_secs(5), waiter)
                                .await
                                .expect("a waiter on another replica's claim was never woken"),
                            other => panic!("a retry got {other:?}"),
                        }
                    }
                }));
            }
        }
    }
    let mut ids: HashMap<usize, Vec<String>> = HashMap::new();
    for call in calls {
        let (n, id) = call.await.unwrap();
        ids.entry(n).or_default().push(id);
    }
    for n in 0..KEYS {
        assert_eq!(
            runs[n].load(Ordering::SeqCst),
            1,
            "order-{n} ran more than once"
        );
        let seen = &ids[&n];
        assert!(seen.windows(2).all(|pair| pair[0] == pair[1]), "{seen:?}");
    }
}

/// Another replica's finish is seen by polling, long before the 60 s lease would run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_sees_another_replicas_finish() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let options = options("poll");
    let (here, there) = (
        open(server, options.clone()).await,
        open(server, options).await,
    );
    let lease = acquire(&there, &key("alice", "shared"), write(LONG)).await;
    let Claim::Running(waiter) = claim(&here, &key("alice", "shared"), write(LONG)).await else {
        panic!("another replica's claim must be seen running");
    };
    there.finish(&lease, recorded("exec_there")).await.unwrap();
    let started = Instant::now();
    timeout(Duration::from_secs(2), waiter)
        .await
        .expect("the waiter never noticed the other replica's finish");
    assert!(started.elapsed() < Duration::from_millis(600));
    match claim(&here, &key("alice", "shared"), write(LONG)).await {
        Claim::Finished(outcome) => assert_eq!(outcome, recorded("exec_there")),
        other => panic!("{other:?}"),
    }
}

/// A replica that dies holding claims (its store dropped, never settling them) leaves leases
/// that run out on Redis's clock: the write is uncertain, the read is free, and nobody needs
/// the dead replica back. The read's key is gone from Redis by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_replicas_leases_run_out_by_their_terms() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let options = options("dead");
    let prefix = options.prefix.clone();
    let dead = open(server, options.clone()).await;
    let claimed = Instant::now();
    acquire(&dead, &key("alice", "read"), read(SHORT)).await;
    acquire(&dead, &key("alice", "write"), write(SHORT)).await;
    drop(dead);

    let alive = open(server, options).await;
    let started = Instant::now();
    let Claim::Running(waiter) = claim(&alive, &key("alice", "write"), write(LONG)).await else {
        panic!("the dead replica's write claim must still be seen running");
    };
    timeout(Duration::from_secs(2), waiter)
        .await
        .expect("the waiter outlived the dead replica's lease");
    assert!(started.elapsed() >= SHORT - Duration::from_millis(100));
    assert!(matches!(
        claim(&alive, &key("alice", "write"), write(LONG)).await,
        Claim::Uncertain(ExecutionStatus::Lost)
    ));

    sleep((claimed + SHORT + Duration::from_millis(50)).saturating_duration_since(Instant::now()))
        .await;
    let mut connection = raw(server).await;
    let read_key = format!("{prefix}{{p:alice}}:r:read");
    let exists: i64 = redis::cmd("EXISTS")
        .arg(&read_key)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(exists, 0, "a lost read's claim outlived its lease in Redis");
    acquire(&alive, &key("alice", "read"), read(LONG)).await;
}

/// Every key the store writes carries a TTL: a held write its lease plus the retention, a
/// held read its lease, a settled key the retention, a share its last member's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_the_store_writes_has_a_ttl() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let retention = Duration::from_secs(3600);
    let options = options("ttls").with_ttl(retention);
    let prefix = options.prefix.clone();
    let store = open(server, options).await;
    acquire(&store, &key("alice", "held-write"), write(LONG)).await;
    acquire(&store, &key("alice", "held-read"), read(LONG)).await;
    let done = acquire(&store, &key("alice", "finished"), write(LONG)).await;
    store.finish(&done, recorded("exec_f")).await.unwrap();
    let uncertain = acquire(&store, &key("bob", "uncertain"), write(LONG)).await;
    store
        .release(&uncertain, Release::Uncertain(ExecutionStatus::TimedOut))
        .await
        .unwrap();
    acquire(&store, &key("bob", "lost"), write(SHORT)).await;
    let released = acquire(&store, &key("carol", "released"), read(LONG)).await;
    store.release(&released, Release::Retry).await.unwrap();
    sleep(SHORT + Duration::from_millis(100)).await;
    assert!(matches!(
        claim(&store, &key("bob", "lost"), write(LONG)).await,
        Claim::Uncertain(ExecutionStatus::Lost)
    ));

    let mut connection = raw(server).await;
    let found = keys_and_ttls(&mut connection, &prefix).await;
    let ms = |duration: Duration| i64::try_from(duration.as_millis()).unwrap();
    let near = |ttl: i64, expected: Duration| (ms(expected) - 5_000..=ms(expected)).contains(&ttl);
    let ttl_of = |name: &str| {
        found
            .iter()
            .find(|(key, _)| key == &format!("{prefix}{name}"))
            .unwrap_or_else(|| panic!("no key {name} in {found:?}"))
            .1
    };
    assert!(found.iter().all(|(_, ttl)| *ttl > 0), "{found:?}");
    assert!(near(ttl_of("{p:alice}:r:held-write"), LONG + retention));
    assert!(near(ttl_of("{p:alice}:r:held-read"), LONG));
    assert!(near(ttl_of("{p:alice}:r:finished"), retention));
    assert!(near(ttl_of("{p:bob}:r:uncertain"), retention));
    // Lost after a short lease: kept as uncertain for the retention from the lease's end.
    assert!(near(ttl_of("{p:bob}:r:lost"), retention));
    for share in [
        "{p:alice}:share",
        "{p:alice}:weights",
        "{totals}:share",
        "{totals}:weights",
    ] {
        assert!(near(ttl_of(share), LONG + retention), "{share}");
    }
    assert!(near(ttl_of("{p:bob}:share"), retention));
    // A released read leaves nothing behind, not even an empty share.
    assert!(
        found.iter().all(|(key, _)| !key.contains("carol")),
        "{found:?}"
    );
    // alice's three keys, bob's two, a share and its weights for each and for the totals.
    assert_eq!(found.len(), 3 + 2 + 2 * 3, "{found:?}");
}

/// A settled key is replayed for the retention, then forgotten: Redis removes it by itself,
/// and the request id may be used again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settled_keys_are_forgotten_after_the_retention() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let options = options("retention").with_ttl(Duration::from_millis(500));
    let prefix = options.prefix.clone();
    let store = open(server, options).await;
    let lease = acquire(&store, &key("alice", "old"), write(LONG)).await;
    store.finish(&lease, recorded("exec_old")).await.unwrap();
    sleep(Duration::from_millis(250)).await;
    assert!(matches!(
        claim(&store, &key("alice", "old"), write(LONG)).await,
        Claim::Finished(_)
    ));
    sleep(Duration::from_millis(400)).await;
    let mut connection = raw(server).await;
    assert_eq!(keys_and_ttls(&mut connection, &prefix).await, Vec::new());
    acquire(&store, &key("alice", "old"), write(LONG)).await;
}

/// The bounds fail closed, and their counts stay right while Redis expires keys that nobody
/// looks at again: a full share is free again exactly when its keys' time is up, not before,
/// and not counted twice after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounds_fail_closed_and_their_counts_follow_expiry() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let retention = Duration::from_millis(800);
    let store = open(
        server,
        options("bounds")
            .with_ttl(retention)
            .with_max_entries_per_principal(3)
            .with_max_entries(5),
    )
    .await;
    let full = |answer: Result<Claim, StoreError>| matches!(answer, Err(StoreError::Full(_)));
    for round in 0..2 {
        for n in 0..3 {
            let lease = acquire(&store, &key("alice", &format!("{round}-{n}")), write(LONG)).await;
            store.finish(&lease, recorded("e")).await.unwrap();
        }
        assert!(
            full(
                store
                    .claim(&key("alice", &format!("{round}-x")), fp(), write(LONG))
                    .await
            ),
            "round {round}: a fourth key in a share of three"
        );
        // Bob fills the totals (five) with two; a third principal is refused.
        for n in 0..2 {
            let lease = acquire(&store, &key("bob", &format!("{round}-{n}")), write(LONG)).await;
            store.finish(&lease, recorded("e")).await.unwrap();
        }
        assert!(full(
            store.claim(&key("carol", "c"), fp(), write(LONG)).await
        ));
        // Everything expires unseen; then the same bounds hold again, no more and no less.
        sleep(retention + Duration::from_millis(150)).await;
    }

    // A read whose holder vanished frees its place at its lease's end, unseen too.
    let lone = open(
        server,
        options("bounds-lease").with_max_entries_per_principal(1),
    )
    .await;
    acquire(&lone, &key("alice", "lost-read"), read(SHORT)).await;
    assert!(full(
        lone.claim(&key("alice", "next"), fp(), read(LONG)).await
    ));
    sleep(SHORT + Duration::from_millis(100)).await;
    acquire(&lone, &key("alice", "next"), read(LONG)).await;
}

/// Outcomes count in bytes: one larger than the largest kept is kept as a note that the call
/// ran; outcomes that fit are kept until the share's bytes are full, then noted; once they
/// expire, outcomes are kept again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcome_bytes_are_bounded_and_free_again_after_expiry() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let retention = Duration::from_millis(1000);
    let store = open(
        server,
        options("bytes")
            .with_ttl(retention)
            .with_max_outcome_bytes(8 << 10)
            .with_max_bytes_per_principal(40 << 10),
    )
    .await;
    let outcome = |id: &str, size: usize| {
        Recorded::new(
            ExecutionId::from(id),
            ExecutionStatus::Succeeded,
            Ok(json!("y".repeat(size))),
        )
    };
    // Another principal's, so that alice's share holds only the rounds below.
    let big = key("bob", "big");
    let lease = acquire(&store, &big, write(LONG)).await;
    store
        .finish(&lease, outcome("exec_big", 64 << 10))
        .await
        .unwrap();
    let Claim::Finished(note) = claim(&store, &big, write(LONG)).await else {
        panic!("the call ran: its retry must not run it again");
    };
    assert_eq!(note.execution_id.as_str(), "exec_big");
    let error = note.result.unwrap_err();
    assert_eq!(error.code(), "OUTCOME_NOT_KEPT");
    assert_eq!(error.details().unwrap()["execution_id"], "exec_big");

    // Until the share is full: outcomes kept while their bytes fit, then notes, then `Full`
    // for the next claim, since each key weighs something too.
    let fill = |round: usize| {
        let store = &store;
        async move {
            let (mut kept, mut noted) = (0, 0);
            for n in 0..20 {
                let key = key("alice", &format!("{round}-{n}"));
                let lease = match store.claim(&key, fp(), write(LONG)).await {
                    Ok(Claim::Acquired(lease)) => lease,
                    Err(StoreError::Full(_)) => return (kept, noted),
                    other => panic!("{other:?}"),
                };
                store.finish(&lease, outcome("e", 6 << 10)).await.unwrap();
                match claim(store, &key, write(LONG)).await {
                    Claim::Finished(replayed) if replayed.result.is_ok() => kept += 1,
                    Claim::Finished(_) => noted += 1,
                    other => panic!("{other:?}"),
                }
            }
            panic!("a share of 40 KiB took 20 outcomes of 6 KiB");
        }
    };
    let first = fill(0).await;
    assert_eq!(first.0, 6, "{first:?}: outcomes of 6 KiB kept in 40 KiB");
    assert!(first.1 >= 1, "{first:?}");
    sleep(retention + Duration::from_millis(150)).await;
    assert_eq!(fill(1).await, first, "expired outcomes still counted");
}

/// The persistence settings are read from the server: the test servers sync their log before
/// each answer; a server told otherwise is reported (and warned of) as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_persistence_is_read_at_connect() {
    let Some(server) = Redis::start() else {
        return;
    };
    assert_eq!(
        open(&server, options("durability")).await.durability(),
        Durability::Fsynced
    );
    let admin = raw(&server).await;
    let set = |name: &'static str, value: &'static str| {
        let mut admin = admin.clone();
        async move {
            let () = redis::cmd("CONFIG")
                .arg("SET")
                .arg(name)
                .arg(value)
                .query_async(&mut admin)
                .await
                .unwrap();
        }
    };
    set("appendfsync", "everysec").await;
    assert_eq!(
        open(&server, options("durability")).await.durability(),
        Durability::EverySecond
    );
    set("appendonly", "no").await;
    // The test servers take no snapshots either (`save ""`).
    assert_eq!(
        open(&server, options("durability")).await.durability(),
        Durability::Nothing
    );
}

/// Neither the store's `Debug` nor a failure to connect shows the URL's password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_password_is_never_shown() {
    let Some(server) = Redis::start() else {
        return;
    };
    let mut admin = raw(&server).await;
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("s3cret-pw")
        .query_async(&mut admin)
        .await
        .unwrap();
    let url = format!("redis://:s3cret-pw@127.0.0.1:{}/0", server.port());
    let store = RedisStore::connect_with(&url, options("password"))
        .await
        .expect("the right password connects");
    let shown = format!("{store:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(
        shown.contains(&format!("127.0.0.1:{}", server.port())),
        "{shown}"
    );
    acquire(&store, &key("alice", "k"), write(LONG)).await;

    let wrong = format!("redis://:wrong-pw@127.0.0.1:{}/0", server.port());
    match RedisStore::connect_with(&wrong, options("password")).await {
        Err(error @ StoreError::Unavailable(_)) => {
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains("wrong-pw"), "{shown}");
        }
        other => panic!("a wrong password must fail closed: {other:?}"),
    }
}

/// TLS is not built in: a `rediss://` URL is refused at connect, not sent in the clear.
#[tokio::test]
async fn a_tls_url_is_refused_at_connect() {
    match RedisStore::connect("rediss://127.0.0.1:1/0").await {
        Err(StoreError::Unavailable(error)) => {
            assert!(error.to_string().contains("TLS"), "{error}");
        }
        other => panic!("a TLS URL must be refused: {other:?}"),
    }
}
