//! What the Redis store promises beyond the shared contract, on real servers: failing closed
//! while Redis is down or hung and serving again by itself, replicas sharing keys, a dead
//! replica's leases settled by their terms, a TTL on every key of a claim, retention, bounds
//! whose counts stay right as Redis expires keys on its own, the persistence read at connect;
//! records committed by replicas at once, against expiring leases, across a crash and after a
//! lost answer, and kept without a TTL; a transactional tool on three runtimes; tasks held by
//! one replica and answered and cancelled from others, written at once by several, left by a
//! dropped replica, kept across a crash, each key with a TTL, bounded, and written once when
//! an answer is lost; and two runtimes following each other's tasks.
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
    AgentError, Carmy, Claim, Effect, ExecutionId, ExecutionStatus, Fingerprint, IdempotencyKey,
    IdempotencyStore, Invocation, Lease, LeaseTerms, NoInput, Recorded, Release, Request,
    StoreError, Tool, ToolSpec,
    records::{Changes, Committed, RecordKey, RecordStore, Versioned},
};
use carmy_store::{
    Durability, RedisStore, RedisStoreOptions,
    conformance::{self, Outage},
};
use redis::aio::MultiplexedConnection;
use serde_json::{Value, json};
use test_servers::Redis;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    time::{Instant, sleep, timeout},
};

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
            .with_request_ids(|ids| ids.with_max_per_principal(3).with_max(5)),
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
        options("bounds-lease").with_request_ids(|ids| ids.with_max_per_principal(1)),
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
            .with_request_ids(|ids| {
                ids.with_max_outcome_bytes(8 << 10)
                    .with_max_bytes_per_principal(40 << 10)
            }),
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

// ---- Records -------------------------------------------------------------------------------

fn at(collection: &str, key: &str) -> RecordKey {
    RecordKey::new(collection, key)
}

async fn read_record(store: &RedisStore, key: &RecordKey) -> Versioned {
    match timeout(Duration::from_secs(5), store.read(key)).await {
        Ok(Ok(read)) => read,
        other => panic!("reading {key:?}: {other:?}"),
    }
}

async fn commit(
    store: &RedisStore,
    changes: &Changes,
    outcome: Option<(&Lease, &Recorded)>,
) -> Committed {
    match timeout(Duration::from_secs(5), store.commit(changes, outcome)).await {
        Ok(Ok(committed)) => committed,
        other => panic!("committing {changes:?}: {other:?}"),
    }
}

fn puts(writes: &[(&str, &str, Value)]) -> Changes {
    Changes {
        writes: writes
            .iter()
            .map(|(collection, key, value)| (at(collection, key), Some(value.clone())))
            .collect(),
        ..Changes::default()
    }
}

/// Three replicas on one server and prefix take order numbers from one counter, many writers
/// each, a third of them under a claim whose outcome commits with the writes, retrying on
/// conflict as the runtime does: every number is taken once, every order is kept, and every
/// claim replays its outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_committing_at_once_lose_no_update() {
    const REPLICAS: usize = 3;
    const WRITERS: usize = 4;
    const EACH: usize = 25;
    let Some(server) = Redis::shared() else {
        return;
    };
    let options = options("records-replicas");
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        replicas.push(Arc::new(open(server, options.clone()).await));
    }
    let conflicts = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for (replica, store) in replicas.iter().enumerate() {
        for writer in 0..WRITERS {
            let (store, conflicts) = (Arc::clone(store), Arc::clone(&conflicts));
            writers.push(tokio::spawn(async move {
                let counter = at("counters", "orders");
                for n in 0..EACH {
                    let who = format!("{replica}-{writer}-{n}");
                    let lease = if n % 3 == 0 {
                        Some(acquire(&store, &key("alice", &who), read(LONG)).await)
                    } else {
                        None
                    };
                    let outcome = recorded(&format!("exec_{who}"));
                    loop {
                        let seen = read_record(&store, &counter).await;
                        let taken = seen.value.as_ref().and_then(Value::as_u64).unwrap_or(0) + 1;
                        let mut changes = puts(&[
                            ("counters", "orders", json!(taken)),
                            ("orders", &format!("ord-{taken:04}"), json!(who)),
                        ]);
                        changes.reads.push((counter.clone(), seen.version));
                        let finishing = lease.as_ref().map(|lease| (lease, &outcome));
                        match commit(&store, &changes, finishing).await {
                            Committed::Done => break,
                            Committed::Conflict => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    if lease.is_some() {
                        match claim(&store, &key("alice", &who), read(LONG)).await {
                            Claim::Finished(kept) => assert_eq!(kept, outcome),
                            other => panic!("{who}'s committed claim got {other:?}"),
                        }
                    }
                }
            }));
        }
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let total = REPLICAS * WRITERS * EACH;
    let store = &replicas[0];
    assert_eq!(
        read_record(store, &at("counters", "orders")).await.value,
        Some(json!(total))
    );
    let orders = store.list("orders").await.unwrap().records;
    let numbers: Vec<String> = orders.iter().map(|(key, _)| key.clone()).collect();
    let expected: Vec<String> = (1..=total).map(|n| format!("ord-{n:04}")).collect();
    assert_eq!(numbers, expected);
    let mut takers: Vec<&str> = orders.iter().filter_map(|(_, who)| who.as_str()).collect();
    takers.sort_unstable();
    takers.dedup();
    assert_eq!(
        takers.len(),
        total,
        "an order was taken twice by one writer"
    );
    eprintln!(
        "{total} commits, {} conflicts run again",
        conflicts.load(Ordering::Relaxed)
    );
}

/// A commit whose lease ran out and was taken over by another replica applies nothing, even
/// when what it read is stale as well (a lost lease is reported first); racing the takeover,
/// it is either applied before it (and the taker finds the key finished) or refused after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_racing_a_lease_expiry_and_takeover_applies_nothing() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let options = options("records-takeover");
    let (late, taker) = (
        open(server, options.clone()).await,
        open(server, options).await,
    );
    let stock = at("stock", "sku-1");
    let _ = commit(&late, &puts(&[("stock", "sku-1", json!(5))]), None).await;

    // Taken over before the late commit: refused as lost, whatever it read.
    let seen = read_record(&late, &stock).await;
    let lease = acquire(&late, &key("alice", "slow"), read(SHORT)).await;
    sleep(SHORT + Duration::from_millis(50)).await;
    let successor = acquire(&taker, &key("alice", "slow"), read(LONG)).await;
    let mut taken = puts(&[("stock", "sku-1", json!(4))]);
    taken.reads.push((stock.clone(), seen.version));
    let committed = commit(&taker, &taken, Some((&successor, &recorded("exec_taker")))).await;
    assert_eq!(committed, Committed::Done);
    let mut stale = puts(&[
        ("stock", "sku-1", json!(4)),
        ("orders", "ord-late", json!("late")),
    ]);
    stale.reads.push((stock.clone(), seen.version));
    assert!(matches!(
        late.commit(&stale, Some((&lease, &recorded("exec_late"))))
            .await,
        Err(StoreError::LeaseLost)
    ));
    let fresh = puts(&[("orders", "ord-late", json!("late"))]);
    assert!(matches!(
        late.commit(&fresh, Some((&lease, &recorded("exec_late"))))
            .await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        read_record(&late, &at("orders", "ord-late")).await,
        Versioned::ABSENT
    );
    assert_eq!(read_record(&late, &stock).await.value, Some(json!(4)));
    match claim(&late, &key("alice", "slow"), read(LONG)).await {
        Claim::Finished(kept) => assert_eq!(kept, recorded("exec_taker")),
        other => panic!("{other:?}"),
    }

    // The commit and a takeover sent at the same instant, around the lease's end: whichever
    // Redis runs first wins, and the other sees it.
    let (mut applied, mut refused) = (0, 0);
    for round in 0..20u64 {
        let request = key("alice", &format!("race-{round}"));
        let order = at("orders", &format!("race-{round}"));
        let lease = acquire(&late, &request, read(Duration::from_millis(40))).await;
        sleep(Duration::from_millis(30 + round)).await;
        let changes = puts(&[("orders", order.key(), json!(round))]);
        let outcome = recorded(&format!("exec_late_{round}"));
        let (committed, claimed) = tokio::join!(
            late.commit(&changes, Some((&lease, &outcome))),
            taker.claim(&request, fp(), read(LONG)),
        );
        let kept = read_record(&late, &order).await;
        match (committed, claimed) {
            (Ok(Committed::Done), claimed) => {
                match claimed {
                    Ok(Claim::Finished(replayed)) => assert_eq!(replayed, outcome),
                    // Claimed before the lease's end: the holder's commit wakes it.
                    Ok(Claim::Running(waiter)) => {
                        timeout(Duration::from_secs(2), waiter).await.unwrap();
                        match claim(&taker, &request, read(LONG)).await {
                            Claim::Finished(replayed) => assert_eq!(replayed, outcome),
                            other => panic!("round {round}: {other:?}"),
                        }
                    }
                    other => panic!("round {round}: the commit won, the claim got {other:?}"),
                }
                assert_eq!(kept.value, Some(json!(round)));
                applied += 1;
            }
            (Err(StoreError::LeaseLost), Ok(Claim::Acquired(_))) => {
                assert_eq!(kept, Versioned::ABSENT, "round {round}");
                refused += 1;
            }
            // Claimed just before the lease's end, committed just after: the commit finds the
            // lease run out (and settles it), applies nothing, and the waiter claims anew.
            (Err(StoreError::LeaseLost), Ok(Claim::Running(waiter))) => {
                assert_eq!(kept, Versioned::ABSENT, "round {round}");
                timeout(Duration::from_secs(2), waiter).await.unwrap();
                match claim(&taker, &request, read(LONG)).await {
                    Claim::Acquired(_) => {}
                    other => panic!("round {round}: {other:?}"),
                }
                refused += 1;
            }
            other => panic!("round {round}: {other:?}"),
        }
    }
    eprintln!("the late commit won {applied} races, the takeover {refused}");
}

/// Records and versions outlive a crash of Redis (its append-only file is synced before each
/// answer); while it is down, commits, reads and listings fail closed within the timeouts, and
/// a commit that failed so applied nothing: once Redis is back, its lease still holds and the
/// same commit applies, with versions that went on growing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_survive_a_crash_and_commits_fail_closed_while_down() {
    let Some(server) = Redis::start() else {
        return;
    };
    let store = open(&server, options("records-crash")).await;
    let lease = acquire(&store, &key("alice", "before"), write(LONG)).await;
    let before = puts(&[
        ("orders", "ord-1", json!({ "total": 12 })),
        ("stock", "sku-1", json!(4)),
    ]);
    let committed = commit(&store, &before, Some((&lease, &recorded("exec_before")))).await;
    assert_eq!(committed, Committed::Done);
    let stock = read_record(&store, &at("stock", "sku-1")).await;
    let listing = store.list("orders").await.unwrap();
    let during = acquire(&store, &key("alice", "during"), write(LONG)).await;

    server.crash();
    let started = Instant::now();
    let mut order = puts(&[
        ("orders", "ord-2", json!({ "total": 3 })),
        ("stock", "sku-1", json!(3)),
    ]);
    order.reads.push((at("stock", "sku-1"), stock.version));
    assert!(matches!(
        store
            .commit(&order, Some((&during, &recorded("exec_during"))))
            .await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.commit(&order, None).await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.read(&at("stock", "sku-1")).await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.list("orders").await,
        Err(StoreError::Unavailable(_))
    ));
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(8),
        "four calls took {waited:?}"
    );

    server.restart();
    assert_eq!(read_record(&store, &at("stock", "sku-1")).await, stock);
    assert_eq!(store.list("orders").await.unwrap(), listing);
    match claim(&store, &key("alice", "before"), write(LONG)).await {
        Claim::Finished(kept) => assert_eq!(kept, recorded("exec_before")),
        other => panic!("{other:?}"),
    }
    let committed = commit(&store, &order, Some((&during, &recorded("exec_during")))).await;
    assert_eq!(committed, Committed::Done);
    let after = read_record(&store, &at("stock", "sku-1")).await;
    assert_eq!(after.value, Some(json!(3)));
    assert!(after.version > stock.version);
    assert_eq!(store.list("orders").await.unwrap().records.len(), 2);
}

/// A TCP proxy to a Redis server that, once armed, swallows the next answer it carries and
/// closes that connection: a call that ran on Redis and whose answer was lost with its
/// connection.
struct LossyProxy {
    port: u16,
    /// How many answers from now the one to lose is (0: none).
    armed: Arc<AtomicUsize>,
    accepting: tokio::task::JoinHandle<()>,
}

impl LossyProxy {
    async fn start(target: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let armed = Arc::new(AtomicUsize::new(0));
        let swallow = Arc::clone(&armed);
        let accepting = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(upstream) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let (mut client_reads, mut client_writes) = client.into_split();
                let (mut upstream_reads, mut upstream_writes) = upstream.into_split();
                let asks = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_reads, &mut upstream_writes).await;
                });
                let swallow = Arc::clone(&swallow);
                tokio::spawn(async move {
                    let mut buffer = vec![0; 64 << 10];
                    while let Ok(read) = upstream_reads.read(&mut buffer).await {
                        let countdown =
                            swallow.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                                n.checked_sub(1)
                            });
                        if read == 0 || countdown == Ok(1) {
                            break;
                        }
                        if client_writes.write_all(&buffer[..read]).await.is_err() {
                            break;
                        }
                    }
                    // Both directions closed: the client finds its connection dead.
                    asks.abort();
                });
            }
        });
        Self {
            port,
            armed,
            accepting,
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The next answer from Redis is lost, and its connection closed.
    fn lose_the_next_answer(&self) {
        self.lose_answer(1);
    }

    /// The `nth` answer from Redis from now (the first is 1) is lost, and its connection
    /// closed: each call answered once, in order.
    fn lose_answer(&self, nth: usize) {
        self.armed.store(nth, Ordering::SeqCst);
    }
}

impl Drop for LossyProxy {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// A commit whose answer was lost with its connection, after Redis ran it: one that finishes a
/// lease is sent again and recognised by its token (done, applied once, the key finished);
/// one without a lease is not sent again, and fails closed (it was applied once, never twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_answer_was_lost_is_never_applied_twice() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let proxy = LossyProxy::start(server.port()).await;
    let store = RedisStore::connect_with(&proxy.url(), options("records-resend"))
        .await
        .expect("a store through the proxy");
    let counter = at("counters", "orders");
    let increment = |seen: &Versioned| {
        let n = seen.value.as_ref().and_then(Value::as_u64).unwrap_or(0);
        let mut changes = puts(&[("counters", "orders", json!(n + 1))]);
        changes.reads.push((counter.clone(), seen.version));
        changes
    };

    let lease = acquire(&store, &key("alice", "resent"), write(LONG)).await;
    let seen = read_record(&store, &counter).await;
    proxy.lose_the_next_answer();
    let committed = commit(
        &store,
        &increment(&seen),
        Some((&lease, &recorded("exec_1"))),
    )
    .await;
    assert_eq!(committed, Committed::Done);
    let once = read_record(&store, &counter).await;
    assert_eq!(once.value, Some(json!(1)));
    match claim(&store, &key("alice", "resent"), write(LONG)).await {
        Claim::Finished(kept) => assert_eq!(kept, recorded("exec_1")),
        other => panic!("{other:?}"),
    }

    proxy.lose_the_next_answer();
    assert!(matches!(
        store.commit(&increment(&once), None).await,
        Err(StoreError::Unavailable(_))
    ));
    let after = read_record(&store, &counter).await;
    assert_eq!(after.value, Some(json!(2)), "applied once by Redis");
    assert!(after.version > once.version);
    // The stamp moved once per commit applied: sent again, the second would have taken one more
    // (or, finding its own write, reported a conflict).
    let mut connection = raw(server).await;
    let stamp: u64 = redis::cmd("GET")
        .arg(format!("{}{{records}}:stamp", store.options().prefix))
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(stamp, 2);
}

/// Records are the application's data: no key of theirs has a TTL, while every key of a claim
/// does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_carry_no_ttl_while_claims_do() {
    let Some(server) = Redis::shared() else {
        return;
    };
    let options = options("records-ttl");
    let prefix = options.prefix.clone();
    let store = open(server, options).await;
    let lease = acquire(&store, &key("alice", "order"), write(LONG)).await;
    let changes = puts(&[
        ("orders", "ord-1", json!({ "total": 12 })),
        ("carts", "c-1", json!([])),
    ]);
    let committed = commit(&store, &changes, Some((&lease, &recorded("exec_1")))).await;
    assert_eq!(committed, Committed::Done);
    // An emptied collection keeps its version, without a TTL either.
    let empty = Changes {
        writes: vec![(at("carts", "c-1"), None)],
        ..Changes::default()
    };
    assert_eq!(commit(&store, &empty, None).await, Committed::Done);
    acquire(&store, &key("bob", "held"), read(LONG)).await;

    let mut connection = raw(server).await;
    let found = keys_and_ttls(&mut connection, &prefix).await;
    let (records, claims): (Vec<_>, Vec<_>) = found
        .iter()
        .partition(|(key, _)| key.contains("{c:") || key.contains("{records}"));
    let names: Vec<&str> = records
        .iter()
        .map(|(key, _)| key.strip_prefix(prefix.as_str()).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "{c:carts}:version",
            "{c:orders}:records",
            "{c:orders}:version",
            "{records}:stamp"
        ]
    );
    assert!(records.iter().all(|(_, ttl)| *ttl == -1), "{records:?}");
    // alice's and bob's requests, their shares and weights, the totals' share and weights.
    assert_eq!(claims.len(), 2 + 2 * 2 + 2, "{claims:?}");
    assert!(claims.iter().all(|(_, ttl)| *ttl > 0), "{claims:?}");
}

/// Places an order: takes the next order number and writes the order under it, both in the
/// call's transaction. Counts its runs (a run whose read went stale runs again).
struct PlaceOrder(Arc<AtomicUsize>);

impl Tool for PlaceOrder {
    type Input = NoInput;
    type Output = Value;
    const SPEC: ToolSpec = ToolSpec::new("place_order", Effect::Write).transactional(true);

    async fn run(&self, _input: NoInput, invocation: Invocation) -> Result<Value, AgentError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        let context = invocation.context();
        let records = context.records();
        let number = records.get::<u64>("counters", "orders").await?.unwrap_or(0) + 1;
        // Other executions run between the read and the commit, as they would on replicas.
        tokio::task::yield_now().await;
        let execution = context
            .execution_id()
            .expect("a tool runs in an execution")
            .to_string();
        records.put("counters", "orders", &number)?;
        records.put("orders", &format!("ord-{number:04}"), &execution)?;
        Ok(json!({ "order": number }))
    }
}

/// Through the runtime: three replicas of a server with a transactional tool, sharing the
/// Redis; calls at once, each with a request id of its own and some sent to two replicas. Each
/// call's effects land exactly once, and a call sent twice is one execution, replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_calls_on_replicas_take_effect_exactly_once() {
    const CALLS: usize = 24;
    let Some(server) = Redis::shared() else {
        return;
    };
    let options = options("records-runtime");
    let runs = Arc::new(AtomicUsize::new(0));
    let mut replicas = Vec::new();
    for _ in 0..3 {
        let store = open(server, options.clone()).await;
        replicas.push(
            Carmy::new()
                .tool(PlaceOrder(Arc::clone(&runs)))
                .store(store)
                .build()
                .expect("a runtime"),
        );
    }
    let mut calls = Vec::new();
    for n in 0..CALLS {
        // Every third call is sent twice, to two replicas.
        let sent_to = if n % 3 == 0 { vec![n, n + 1] } else { vec![n] };
        for replica in sent_to {
            let runtime = replicas[replica % 3].clone();
            calls.push(tokio::spawn(async move {
                let request = Request::new("place_order", json!({})).request_id(format!("o-{n}"));
                (n, runtime.execute(request).await)
            }));
        }
    }
    let mut outcomes: HashMap<usize, Vec<_>> = HashMap::new();
    for call in calls {
        let (n, outcome) = call.await.unwrap();
        assert!(outcome.is_ok(), "call {n}: {outcome:?}");
        outcomes.entry(n).or_default().push(outcome);
    }
    let mut executions = Vec::new();
    for (n, seen) in &outcomes {
        let first = &seen[0];
        assert!(
            seen.iter()
                .all(|outcome| outcome.execution_id == first.execution_id
                    && outcome.result == first.result),
            "call {n} ran as two executions: {seen:?}"
        );
        let mut statuses: Vec<_> = seen.iter().map(|outcome| outcome.status).collect();
        statuses.sort_by_key(|status| status.as_str());
        let expected: &[ExecutionStatus] = if seen.len() == 2 {
            &[ExecutionStatus::Replayed, ExecutionStatus::Succeeded]
        } else {
            &[ExecutionStatus::Succeeded]
        };
        assert_eq!(statuses, expected, "call {n}");
        executions.push(first.execution_id.to_string());
    }

    let store = open(server, options).await;
    assert_eq!(
        read_record(&store, &at("counters", "orders")).await.value,
        Some(json!(CALLS))
    );
    let orders = store.list("orders").await.unwrap().records;
    let numbers: Vec<&str> = orders.iter().map(|(key, _)| key.as_str()).collect();
    let expected: Vec<String> = (1..=CALLS).map(|n| format!("ord-{n:04}")).collect();
    assert_eq!(numbers, expected);
    let mut placed_by: Vec<String> = orders
        .iter()
        .map(|(_, execution)| execution.as_str().unwrap().to_owned())
        .collect();
    placed_by.sort();
    executions.sort();
    assert_eq!(
        placed_by, executions,
        "one order per execution, and no other"
    );
    eprintln!(
        "{CALLS} calls ran {} times in all",
        runs.load(Ordering::Relaxed)
    );
}

/// Tasks (`TaskStore`), in a module of their own: `RedisStore` is an `IdempotencyStore` too,
/// and both traits have a `finish`.
mod tasks {
    use std::{collections::BTreeMap, sync::Arc, time::Duration};

    use carmy_core::{
        AgentError, Ask, AskKind, Asked, Asker, Asks, Carmy, Context, Created, Effect,
        ErrorCategory, ExecutionId, ExecutionStatus, Invocation, Limits, NewTask, NoInput,
        OutcomeKind, Recorded, Request, Runtime, StoreError, TaskEnding, TaskKey, TaskLease,
        TaskProgress, TaskRecord, TaskReport, TaskStatus, TaskStore, TaskSupport, Tool, ToolSpec,
        codes,
    };
    use carmy_store::RedisStore;
    use serde_json::{Value, json};
    use test_servers::Redis;
    use tokio::time::{Instant, sleep, timeout};

    // Not `super::*`: it would bring `IdempotencyStore`, whose `finish` is another.
    use super::{LONG, LossyProxy, SHORT, keys_and_ttls, open, options, raw};

    fn task_key(principal: &str, id: &str) -> TaskKey {
        TaskKey::new(Some(principal), id)
    }

    async fn create_task(
        store: &RedisStore,
        key: &TaskKey,
        ttl: Duration,
        lease: Duration,
    ) -> TaskLease {
        let task = NewTask::new(
            key.clone(),
            "review",
            ExecutionId::from("exec_task"),
            ttl,
            Duration::from_millis(500),
        );
        match timeout(Duration::from_secs(5), store.create(task, lease)).await {
            Ok(Ok(created)) => created.lease,
            other => panic!("creating {key:?}: {:?}", other.map(|r| r.map(drop))),
        }
    }

    async fn task(store: &RedisStore, key: &TaskKey) -> TaskRecord {
        store
            .get(key)
            .await
            .expect("the task store answers")
            .unwrap_or_else(|| panic!("task {key:?} was not found"))
    }

    fn form(message: &str) -> Ask {
        Ask::input(
            message,
            json!({ "type": "object", "properties": { "n": { "type": "integer" } } }),
        )
    }

    fn accept(n: usize) -> Value {
        json!({ "action": "accept", "content": { "n": n } })
    }

    fn ended(value: Value) -> TaskEnding {
        TaskEnding::new(Recorded::new(
            ExecutionId::from("exec_task"),
            ExecutionStatus::Succeeded,
            Ok(value),
        ))
    }

    fn stopped() -> TaskEnding {
        TaskEnding::new(Recorded::new(
            ExecutionId::from("exec_task"),
            ExecutionStatus::Cancelled,
            Err(AgentError::new(
                ErrorCategory::Cancelled,
                codes::CANCELLED,
                "cancelled",
            )),
        ))
    }

    /// Three replicas, each with a store of its own: the task one holds is answered from a second
    /// and cancelled from a third, and the holder's wait (armed before each) wakes within a poll
    /// or two, long before its next renewal would have read them. Its own renewals wake nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_held_by_one_replica_is_answered_and_cancelled_from_the_others() {
        let Some(server) = Redis::shared() else {
            return;
        };
        let options = options("task-replicas");
        let holder = open(server, options.clone()).await;
        let answerer = open(server, options.clone()).await;
        let canceller = open(server, options).await;
        let key = task_key("alice", "task_replicas");
        let lease = create_task(&holder, &key, LONG, LONG).await;
        holder
            .ask(&lease, Asks::new().with("confirm.1", form("Sure?")))
            .await
            .unwrap();
        holder.renew(&lease, LONG, None).await.unwrap();
        assert!(
            timeout(Duration::from_millis(700), holder.changed(&lease))
                .await
                .is_err(),
            "the holder's own writes woke it"
        );

        let changed = holder.changed(&lease);
        let started = Instant::now();
        let responded = answerer
            .respond(&key, BTreeMap::from([("confirm.1".to_owned(), accept(1))]))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(responded.accepted, ["confirm.1"]);
        timeout(Duration::from_secs(2), changed)
            .await
            .expect("the holder never noticed the answer");
        let answered_in = started.elapsed();
        let signals = holder.renew(&lease, LONG, None).await.unwrap();
        assert_eq!(signals.answers["confirm.1"], accept(1));
        assert!(!signals.cancel_requested);
        assert_eq!(task(&canceller, &key).await.status, TaskStatus::Working);

        let changed = holder.changed(&lease);
        let started = Instant::now();
        let cancelled = canceller.cancel(&key).await.unwrap().unwrap();
        assert!(cancelled.cancel_requested);
        timeout(Duration::from_secs(2), changed)
            .await
            .expect("the holder never noticed the cancel request");
        let cancelled_in = started.elapsed();
        assert!(
            holder
                .renew(&lease, LONG, None)
                .await
                .unwrap()
                .cancel_requested
        );
        holder.finish(&lease, stopped()).await.unwrap();
        assert_eq!(task(&answerer, &key).await.status, TaskStatus::Cancelled);
        for noticed in [answered_in, cancelled_in] {
            assert!(
                noticed < Duration::from_secs(1),
                "noticed after {noticed:?}"
            );
        }
        eprintln!(
            "the holder noticed the answer in {answered_in:?}, the cancel in {cancelled_in:?}"
        );
    }

    /// Answers (one per call, from two replicas), a cancel and the holder's renewals with progress,
    /// all at once on one task: every write lands, none undoes another, and each answer is
    /// accepted by the call that brought it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_answers_cancels_and_renewals_lose_no_update() {
        const QUESTIONS: usize = 24;
        const RENEWALS: usize = 24;
        let Some(server) = Redis::shared() else {
            return;
        };
        let options = options("task-races");
        let holder = Arc::new(open(server, options.clone()).await);
        let others = [
            Arc::new(open(server, options.clone()).await),
            Arc::new(open(server, options).await),
        ];
        let key = task_key("alice", "task_races");
        let lease = create_task(&holder, &key, LONG, LONG).await;
        let questions = (0..QUESTIONS).fold(Asks::new(), |asks, n| {
            asks.with(format!("q.{n}"), form(&format!("Question {n}?")))
        });
        holder.ask(&lease, questions).await.unwrap();

        let start = Arc::new(tokio::sync::Barrier::new(3));
        let mut calls = Vec::new();
        for (replica, store) in others.iter().enumerate() {
            let (store, key, start) = (Arc::clone(store), key.clone(), Arc::clone(&start));
            calls.push(tokio::spawn(async move {
                start.wait().await;
                for n in (replica..QUESTIONS).step_by(2) {
                    let question = format!("q.{n}");
                    let answers = BTreeMap::from([(question.clone(), accept(n))]);
                    let responded = store.respond(&key, answers).await.unwrap().unwrap();
                    assert_eq!(responded.accepted, [question]);
                    if replica == 1 && n == QUESTIONS / 2 + 1 {
                        assert!(store.cancel(&key).await.unwrap().unwrap().cancel_requested);
                    }
                }
            }));
        }
        let renewing = {
            let (holder, lease, start) = (Arc::clone(&holder), lease.clone(), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                for n in 0..RENEWALS {
                    let report = TaskReport::new(
                        Some(TaskProgress {
                            done: n as f64,
                            total: Some(RENEWALS as f64),
                        }),
                        Some(format!("step {n}")),
                    );
                    holder.renew(&lease, LONG, Some(report)).await.unwrap();
                }
            })
        };
        for call in calls {
            call.await.unwrap();
        }
        renewing.await.unwrap();

        let record = task(&holder, &key).await;
        assert_eq!(
            record.status,
            TaskStatus::Working,
            "every question answered"
        );
        assert!(record.cancel_requested);
        assert_eq!(record.answers.len(), QUESTIONS);
        for n in 0..QUESTIONS {
            assert_eq!(record.answers[&format!("q.{n}")], accept(n));
        }
        let last = (RENEWALS - 1) as f64;
        assert_eq!(record.progress.unwrap().done, last);
        assert_eq!(
            record.status_message.as_deref(),
            Some(format!("step {}", RENEWALS - 1).as_str())
        );
        let signals = holder.renew(&lease, LONG, None).await.unwrap();
        assert!(signals.cancel_requested);
        assert_eq!(signals.answers.len(), QUESTIONS);
    }

    /// A replica that dies holding a task (its store dropped, never renewing) leaves it to run out
    /// on Redis's clock: a sweep on another replica settles it `failed` in Redis before anyone
    /// reads it, and it is kept for its ttl from the lease's end; one nobody sweeps is settled by
    /// the first read. The dead holder's lease is refused.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_replicas_task_ends_failed_after_its_lease() {
        let Some(server) = Redis::shared() else {
            return;
        };
        let options = options("task-dead");
        let prefix = options.prefix.clone();
        let dead = open(server, options.clone()).await;
        let swept = task_key("alice", "task_swept");
        let read = task_key("alice", "task_read");
        let ttl = Duration::from_secs(3600);
        let lease = create_task(&dead, &swept, ttl, SHORT).await;
        dead.ask(&lease, Asks::new().with("confirm.1", form("Sure?")))
            .await
            .unwrap();
        create_task(&dead, &read, ttl, SHORT).await;
        drop(dead);

        let alive = open(server, options).await;
        assert_eq!(task(&alive, &swept).await.status, TaskStatus::InputRequired);
        sleep(SHORT + Duration::from_millis(100)).await;
        alive.sweep().await.unwrap();
        let mut connection = raw(server).await;
        let kept: String = redis::cmd("HGET")
            .arg(format!("{prefix}{{p:alice}}:t:task_swept"))
            .arg("record")
            .query_async(&mut connection)
            .await
            .unwrap();
        assert!(kept.contains(r#""status":"failed""#), "{kept}");
        let ttl_left: i64 = redis::cmd("PTTL")
            .arg(format!("{prefix}{{p:alice}}:t:task_swept"))
            .query_async(&mut connection)
            .await
            .unwrap();
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap();
        assert!((ttl_ms - 5_000..=ttl_ms).contains(&ttl_left), "{ttl_left}");

        for key in [&swept, &read] {
            let record = task(&alive, key).await;
            assert_eq!(record.status, TaskStatus::Failed);
            assert!(record.pending().next().is_none());
            let outcome = record.outcome.unwrap();
            assert_eq!(outcome.status, ExecutionStatus::Lost);
            assert_eq!(outcome.result.unwrap_err().code(), codes::EXECUTION_LOST);
        }
        let late = BTreeMap::from([("confirm.1".to_owned(), accept(1))]);
        let responded = alive.respond(&swept, late).await.unwrap().unwrap();
        assert_eq!(responded.ignored, ["confirm.1"]);
        assert!(matches!(
            alive.finish(&lease, ended(json!("late"))).await,
            Err(StoreError::LeaseLost)
        ));
        assert!(matches!(
            alive.renew(&lease, LONG, None).await,
            Err(StoreError::LeaseLost)
        ));
    }

    /// Tasks outlive a crash of Redis (its append-only file synced before each answer), exactly as
    /// they were; while it is down every call fails closed within the timeouts; once it is back,
    /// the same store serves the same tasks by itself.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tasks_survive_a_crash_and_fail_closed_while_down() {
        let Some(server) = Redis::start() else {
            return;
        };
        let store = open(&server, options("tasks-crash")).await;
        let running = task_key("alice", "task_running");
        let waiting = task_key("alice", "task_waiting");
        let done = task_key("bob", "task_done");
        let running_lease = create_task(&store, &running, LONG, LONG).await;
        let report = TaskReport::new(
            Some(TaskProgress {
                done: 1.0,
                total: Some(3.0),
            }),
            Some("one of three".into()),
        );
        store
            .renew(&running_lease, LONG, Some(report))
            .await
            .unwrap();
        let waiting_lease = create_task(&store, &waiting, LONG, LONG).await;
        store
            .ask(&waiting_lease, Asks::new().with("confirm.1", form("Sure?")))
            .await
            .unwrap();
        let done_lease = create_task(&store, &done, LONG, LONG).await;
        store
            .finish(&done_lease, ended(json!({ "n": 1 })))
            .await
            .unwrap();
        let mut before = Vec::new();
        for key in [&running, &waiting, &done] {
            before.push(task(&store, key).await);
        }

        server.crash();
        let started = Instant::now();
        let unavailable = |what: &str, failed: bool| assert!(failed, "{what} did not fail closed");
        let answer = BTreeMap::from([("confirm.1".to_owned(), accept(1))]);
        let fresh = NewTask::new(
            task_key("alice", "task_during"),
            "review",
            ExecutionId::from("exec_task"),
            LONG,
            Duration::from_millis(500),
        );
        unavailable(
            "create",
            matches!(
                store.create(fresh, LONG).await,
                Err(StoreError::Unavailable(_))
            ),
        );
        unavailable(
            "get",
            matches!(store.get(&running).await, Err(StoreError::Unavailable(_))),
        );
        unavailable(
            "cancel",
            matches!(
                store.cancel(&running).await,
                Err(StoreError::Unavailable(_))
            ),
        );
        unavailable(
            "respond",
            matches!(
                store.respond(&waiting, answer.clone()).await,
                Err(StoreError::Unavailable(_))
            ),
        );
        unavailable(
            "renew",
            matches!(
                store.renew(&running_lease, LONG, None).await,
                Err(StoreError::Unavailable(_))
            ),
        );
        unavailable(
            "ask",
            matches!(
                store.ask(&running_lease, Asks::new()).await,
                Err(StoreError::Unavailable(_))
            ),
        );
        unavailable(
            "finish",
            matches!(
                store.finish(&running_lease, ended(json!(2))).await,
                Err(StoreError::Unavailable(_))
            ),
        );
        unavailable(
            "sweep",
            matches!(store.sweep().await, Err(StoreError::Unavailable(_))),
        );
        let waited = started.elapsed();
        assert!(
            waited < Duration::from_secs(8),
            "eight calls took {waited:?}"
        );

        server.restart();
        for (key, record) in [&running, &waiting, &done].into_iter().zip(&before) {
            assert_eq!(&task(&store, key).await, record);
        }
        let responded = store.respond(&waiting, answer).await.unwrap().unwrap();
        assert_eq!(responded.accepted, ["confirm.1"]);
        let signals = store.renew(&waiting_lease, LONG, None).await.unwrap();
        assert_eq!(signals.answers["confirm.1"], accept(1));
        store.cancel(&running).await.unwrap().unwrap();
        assert!(
            store
                .renew(&running_lease, LONG, None)
                .await
                .unwrap()
                .cancel_requested
        );
        store.finish(&running_lease, stopped()).await.unwrap();
        assert_eq!(task(&store, &running).await.status, TaskStatus::Cancelled);
        create_task(&store, &task_key("alice", "task_after"), LONG, LONG).await;
    }

    /// Every key of a task carries a TTL: a running task its lease plus its ttl, an ended one its
    /// ttl from its end (a lost one from its lease's end), the shares as long as their last
    /// member (the totals an hour more, for the sweep to count what Redis forgot), the index of
    /// leases as long as the longest kept of its tasks.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_task_key_has_a_ttl() {
        let Some(server) = Redis::shared() else {
            return;
        };
        let options = options("task-ttls");
        let prefix = options.prefix.clone();
        let store = open(server, options).await;
        let ttl = Duration::from_secs(3600);
        create_task(&store, &task_key("alice", "running"), ttl, LONG).await;
        let lease = create_task(&store, &task_key("alice", "ended"), ttl, LONG).await;
        store.finish(&lease, ended(json!(1))).await.unwrap();
        let lease = create_task(&store, &task_key("carol", "waiting"), ttl, LONG).await;
        store
            .ask(&lease, Asks::new().with("confirm.1", form("Sure?")))
            .await
            .unwrap();
        create_task(&store, &task_key("bob", "lost"), ttl, SHORT).await;
        sleep(SHORT + Duration::from_millis(100)).await;
        assert_eq!(
            task(&store, &task_key("bob", "lost")).await.status,
            TaskStatus::Failed
        );

        let mut connection = raw(server).await;
        let found = keys_and_ttls(&mut connection, &prefix).await;
        let ms = |duration: Duration| i64::try_from(duration.as_millis()).unwrap();
        let near =
            |ttl: i64, expected: Duration| (ms(expected) - 5_000..=ms(expected)).contains(&ttl);
        let ttl_of = |name: &str| {
            found
                .iter()
                .find(|(key, _)| key == &format!("{prefix}{name}"))
                .unwrap_or_else(|| panic!("no key {name} in {found:?}"))
                .1
        };
        assert!(found.iter().all(|(_, ttl)| *ttl > 0), "{found:?}");
        assert!(near(ttl_of("{p:alice}:t:running"), LONG + ttl));
        assert!(near(ttl_of("{p:alice}:t:ended"), ttl));
        assert!(near(ttl_of("{p:carol}:t:waiting"), LONG + ttl));
        assert!(near(ttl_of("{p:bob}:t:lost"), ttl));
        for share in [
            "{p:alice}:tasks",
            "{p:alice}:task-weights",
            "{p:carol}:tasks",
            "{tasks}:leases",
        ] {
            assert!(near(ttl_of(share), LONG + ttl), "{share}");
        }
        assert!(near(ttl_of("{p:bob}:tasks"), ttl));
        let hour = Duration::from_secs(3600);
        assert!(near(ttl_of("{tasks}:share"), LONG + ttl + hour));
        assert!(near(ttl_of("{tasks}:weights"), LONG + ttl + hour));
        // Four tasks; a share and its weights for each of three principals and for the totals;
        // the index of leases.
        assert_eq!(found.len(), 4 + 2 * 4 + 1, "{found:?}");
    }

    /// The bounds fail closed, and their counts follow Redis's expiry: a full share or full totals
    /// refuse new tasks and forget nothing; once the tasks' time is up, unseen, the same bounds
    /// hold again, no more and no less. Questions that do not fit are refused, an outcome too
    /// large is kept as a note that the call ran.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn task_bounds_fail_closed_and_their_counts_follow_expiry() {
        let Some(server) = Redis::shared() else {
            return;
        };
        let ttl = Duration::from_millis(600);
        let store = open(
            server,
            options("task-bounds").with_tasks(|tasks| tasks.with_max_per_principal(2).with_max(3)),
        )
        .await;
        let full =
            |created: Result<Created, StoreError>| matches!(created, Err(StoreError::Full(_)));
        let new = |principal: &str, id: &str| {
            NewTask::new(
                task_key(principal, id),
                "review",
                ExecutionId::from("exec_task"),
                ttl,
                Duration::from_millis(500),
            )
        };
        for round in 0..2 {
            for n in 0..2 {
                let id = format!("{round}-{n}");
                let lease = create_task(&store, &task_key("alice", &id), ttl, LONG).await;
                store.finish(&lease, ended(json!(n))).await.unwrap();
            }
            assert!(
                full(
                    store
                        .create(new("alice", &format!("{round}-x")), LONG)
                        .await
                ),
                "round {round}: a third task in a share of two"
            );
            let lease = create_task(&store, &task_key("bob", &format!("{round}")), ttl, LONG).await;
            store.finish(&lease, ended(json!("b"))).await.unwrap();
            assert!(full(
                store.create(new("carol", &format!("{round}")), LONG).await
            ));
            for id in ["0", "1"] {
                let kept = task(&store, &task_key("alice", &format!("{round}-{id}"))).await;
                assert_eq!(kept.status, TaskStatus::Completed);
            }
            sleep(ttl + Duration::from_millis(150)).await;
        }

        let small = open(
            server,
            options("task-bytes").with_tasks(|tasks| {
                tasks
                    .with_max_bytes_per_principal(8 << 10)
                    .with_max_outcome_bytes(1 << 10)
            }),
        )
        .await;
        let key = task_key("alice", "task_small");
        let lease = create_task(&small, &key, LONG, LONG).await;
        let long = form(&"x".repeat(16 << 10));
        assert!(matches!(
            small.ask(&lease, Asks::new().with("long.1", long)).await,
            Err(StoreError::Full(_))
        ));
        assert!(task(&small, &key).await.questions.is_empty());
        small
            .finish(&lease, ended(json!("y".repeat(4 << 10))))
            .await
            .unwrap();
        let record = task(&small, &key).await;
        assert_eq!(record.status, TaskStatus::Completed);
        let error = record.outcome.unwrap().result.unwrap_err();
        assert_eq!(error.code(), codes::OUTCOME_NOT_KEPT);
    }

    /// A task's write whose answer was lost with its connection, after Redis ran it, is sent again
    /// and recognised: a create answers created (one task), an answer is accepted (not ignored as
    /// answered already), a finish is done (not a lost lease); each applied once, as the task's
    /// version counts.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_write_whose_answer_was_lost_is_applied_once() {
        let Some(server) = Redis::shared() else {
            return;
        };
        let proxy = LossyProxy::start(server.port()).await;
        let options = options("task-resend");
        let prefix = options.prefix.clone();
        let store = RedisStore::connect_with(&proxy.url(), options)
            .await
            .expect("a store through the proxy");
        let key = task_key("alice", "task_resent");
        // Redis's clock, then the create script.
        proxy.lose_answer(2);
        let lease = create_task(&store, &key, LONG, LONG).await;
        store
            .ask(&lease, Asks::new().with("confirm.1", form("Sure?")))
            .await
            .unwrap();
        // The read, then the write.
        proxy.lose_answer(2);
        let responded = store
            .respond(&key, BTreeMap::from([("confirm.1".to_owned(), accept(1))]))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(responded.accepted, ["confirm.1"]);
        proxy.lose_answer(2);
        store
            .finish(&lease, ended(json!({ "n": 1 })))
            .await
            .unwrap();
        let record = task(&store, &key).await;
        assert_eq!(record.status, TaskStatus::Completed);
        assert_eq!(record.outcome.unwrap().result.unwrap(), json!({ "n": 1 }));
        let mut connection = raw(server).await;
        let version: u64 = redis::cmd("HGET")
            .arg(format!("{prefix}{{p:alice}}:t:task_resent"))
            .arg("version")
            .query_async(&mut connection)
            .await
            .unwrap();
        assert_eq!(
            version, 4,
            "created, asked, answered and finished once each"
        );
    }

    /// Asks for approval, then says what it was told; cancelled while it waits, it stops there.
    struct Review;

    impl Tool for Review {
        type Input = NoInput;
        type Output = Value;
        const SPEC: ToolSpec = ToolSpec::new("review", Effect::Write)
            .task(TaskSupport::Required)
            .timeout(Duration::from_secs(30));

        async fn run(&self, _: NoInput, invocation: Invocation) -> Result<Value, AgentError> {
            let context = invocation.context();
            context.progress(1.0, Some(2.0), Some("waiting for approval"));
            let answer = context
                .ask_input("approve", "Approve?", json!({ "type": "object" }))
                .await?;
            Ok(json!({ "approved": answer.action.as_str() }))
        }
    }

    /// A client that can answer any question (a task's questions go through its store).
    struct AnyClient;

    impl Asker for AnyClient {
        fn can_ask(&self, _: AskKind) -> bool {
            true
        }

        async fn ask(&self, _: &Asks) -> Asked {
            Asked::Refused(AgentError::internal("a task's questions go to its store"))
        }
    }

    /// Reads the task on `runtime` until `done` holds, for a few seconds at most.
    async fn until(
        runtime: &Runtime,
        key: &TaskKey,
        done: impl Fn(&TaskRecord) -> bool,
    ) -> TaskRecord {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let record = runtime.task(key).await.expect("the task is found");
            if done(&record) {
                return record;
            }
            assert!(Instant::now() < deadline, "the task stayed {record:?}");
            sleep(Duration::from_millis(20)).await;
        }
    }

    /// Through the runtime: two servers, each a runtime whose store (claims and tasks) is its own
    /// `RedisStore` on one Redis. A task started on one is read, answered and cancelled from the
    /// other, and a retry of its call there is replayed; its owner alone finds it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tasks_started_on_one_runtime_are_followed_from_another() {
        let Some(server) = Redis::shared() else {
            return;
        };
        let options = options("task-runtimes");
        let mut runtimes = Vec::new();
        for _ in 0..2 {
            let store = Arc::new(open(server, options.clone()).await);
            runtimes.push(
                Carmy::new()
                    .tool(Review)
                    .store(Arc::clone(&store))
                    .task_store(store)
                    .limits(Limits::default().with_task_lease(Duration::from_secs(3)))
                    .build()
                    .expect("a runtime"),
            );
        }
        let (a, b) = (&runtimes[0], &runtimes[1]);
        let start = |request_id: &str| {
            let request = Request::new("review", json!({}))
                .allow_task()
                .asker(AnyClient)
                .request_id(request_id)
                .context(Context::new().with_principal("alice"));
            async move {
                let outcome = a.execute(request).await;
                match outcome.kind {
                    OutcomeKind::Task(task) => task.key,
                    other => panic!("expected a task, got {other:?}: {:?}", outcome.result),
                }
            }
        };

        let approved = start("review-1").await;
        let waiting = until(b, &approved, |record| record.pending().count() == 1).await;
        assert_eq!(waiting.status, TaskStatus::InputRequired);
        assert_eq!(
            waiting.status_message.as_deref(),
            Some("waiting for approval")
        );
        let question = waiting.pending().next().unwrap().0.to_owned();
        let answered = b
            .answer_task(
                &approved,
                BTreeMap::from([(question, json!({ "action": "accept" }))]),
            )
            .await
            .unwrap();
        assert_eq!(answered.accepted.len(), 1);
        let done = until(b, &approved, |record| record.status.is_terminal()).await;
        assert_eq!(done.status, TaskStatus::Completed);
        assert_eq!(
            done.outcome.unwrap().result.unwrap(),
            json!({ "approved": "accept" })
        );
        assert_eq!(
            a.task(&approved).await.unwrap().status,
            TaskStatus::Completed
        );
        let retry = Request::new("review", json!({}))
            .allow_task()
            .asker(AnyClient)
            .request_id("review-1")
            .context(Context::new().with_principal("alice"));
        // The call's claim is in the same Redis: a retry on the other runtime is the task's
        // execution, replayed.
        let replayed = b.execute(retry).await;
        assert_eq!(replayed.status, ExecutionStatus::Replayed);
        assert_eq!(replayed.execution_id, done.execution_id);
        assert_eq!(replayed.result.unwrap(), json!({ "approved": "accept" }));

        let refused = start("review-2").await;
        until(b, &refused, |record| record.pending().count() == 1).await;
        assert_eq!(
            b.cancel_task(&refused).await.unwrap().status,
            TaskStatus::InputRequired
        );
        let cancelled = until(a, &refused, |record| record.status.is_terminal()).await;
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        assert_eq!(
            cancelled.outcome.unwrap().status,
            ExecutionStatus::Cancelled
        );

        let mallory = TaskKey::new(Some("mallory"), approved.id().clone());
        assert_eq!(
            b.task(&mallory).await.unwrap_err().code(),
            codes::TASK_NOT_FOUND
        );
    }
}
