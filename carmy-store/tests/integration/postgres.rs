//! What the PostgreSQL store promises beyond the shared contract, against real servers: several
//! replicas on one database, a replica that dies, retention and the sweep, bounds across
//! replicas, the layout's migrations, waiters woken by another replica, and failing closed
//! (the server down, a lock held, the pool exhausted) then serving again. For records:
//! replicas committing at once without a lost update or a deadlock, an absent record's read
//! against its concurrent insert, a commit racing a takeover of its key or waiting on a held
//! collection, listings past their bound, a layout-1 schema migrated in place, records across
//! a crash, and transactional tools on three runtimes taking effect once per call. For tasks
//! (`mod tasks`): replicas answering and cancelling a task another holds, its holder told
//! through `NOTIFY`; a dropped replica's tasks failing after their lease; tasks across a crash;
//! a layout-2 schema migrated to layout 3; two runtimes sharing tasks end to end.
//!
//! Each test that can share the test process's server does, in a schema of its own; those that
//! crash their server start their own. Without PostgreSQL installed they pass without running
//! (see `test_servers`).

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
    IdempotencyStore, Invocation, Lease, LeaseTerms, NoInput, Recorded, Release, Request, Runtime,
    StoreError, Tool, ToolSpec,
    records::{Changes, Committed, MAX_LISTED, RecordKey, RecordStore, Versioned},
};
use carmy_store::{
    PostgresStore, PostgresStoreOptions,
    conformance::{self, Outage},
};
use serde_json::{Value, json};
use test_servers::Postgres;
use tokio::time::{Instant, sleep, timeout};

const WRITE: LeaseTerms = LeaseTerms {
    duration: Duration::from_secs(60),
    if_lost: Release::Uncertain(ExecutionStatus::Lost),
};

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

fn key(id: &str) -> IdempotencyKey {
    IdempotencyKey::new(Some("alice"), id)
}

fn recorded(id: &str) -> Recorded {
    Recorded::new(
        ExecutionId::from(id),
        ExecutionStatus::Succeeded,
        Ok(json!({ "order": id })),
    )
}

/// A schema no other test uses.
fn schema(name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("{name}_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

async fn open(server: &Postgres, options: PostgresStoreOptions) -> PostgresStore {
    PostgresStore::connect_with(&server.url(), options)
        .await
        .expect("a store")
}

async fn acquire(store: &PostgresStore, key: &IdempotencyKey, terms: LeaseTerms) -> Lease {
    match store.claim(key, fp(), terms).await {
        Ok(Claim::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key:?}: {other:?}"),
    }
}

/// One number `sql` selects.
fn number(server: &Postgres, sql: &str) -> i64 {
    let text = server.sql(sql);
    text.parse()
        .unwrap_or_else(|_| panic!("{sql} printed {text:?}"))
}

/// Whether every share and every totals slot counts exactly the rows it stands for.
fn counts_match_rows(server: &Postgres, schema: &str) -> bool {
    let shares = number(
        server,
        &format!(
            "SELECT count(*) FROM (SELECT principal, count(*) AS n, sum(bytes) AS b \
             FROM {schema}.claims GROUP BY principal) AS actual \
             FULL JOIN {schema}.shares AS share USING (principal) \
             WHERE actual.n IS DISTINCT FROM share.entries OR actual.b IS DISTINCT FROM share.bytes"
        ),
    );
    let slots = number(
        server,
        &format!(
            "SELECT count(*) FROM (SELECT {schema}.slot_of(principal) AS slot, count(*) AS n, \
             sum(bytes) AS b FROM {schema}.claims GROUP BY 1) AS actual \
             RIGHT JOIN {schema}.totals AS total USING (slot) \
             WHERE coalesce(actual.n, 0) <> total.entries OR coalesce(actual.b, 0) <> total.bytes"
        ),
    );
    shares == 0 && slots == 0
}

/// A server of the test's own, crashed and restarted by the conformance scenario.
struct Crashing(Postgres);

impl Outage for Crashing {
    fn take_down(&self) {
        self.0.crash();
    }

    fn bring_back(&self) {
        self.0.restart();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fails_closed_while_down_and_serves_again_by_itself() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let options = PostgresStoreOptions::default()
        .with_schema("outage")
        .with_connect_timeout(Duration::from_secs(2))
        .with_statement_timeout(Duration::from_secs(2));
    let store = Arc::new(open(&server, options).await);
    conformance::fails_closed_while_down(store, Crashing(server)).await;
}

/// Three replicas, each claiming the same keys many times at once as the runtime does (claim,
/// wait while running, claim again): each key runs once, and every claim gets its outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_claiming_the_same_keys_run_each_once() {
    const REPLICAS: usize = 3;
    const KEYS: usize = 8;
    const CLAIMS: usize = 12;
    let Some(server) = Postgres::shared() else {
        return;
    };
    let options = PostgresStoreOptions::default().with_schema(schema("replicas"));
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        replicas.push(Arc::new(open(server, options.clone()).await));
    }
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let start = Arc::new(tokio::sync::Barrier::new(REPLICAS * KEYS * CLAIMS));
    let mut claims = Vec::new();
    for (replica, store) in replicas.iter().enumerate() {
        for n in 0..KEYS {
            for claim in 0..CLAIMS {
                let (store, runs, start) =
                    (Arc::clone(store), Arc::clone(&runs), Arc::clone(&start));
                claims.push(tokio::spawn(async move {
                    let key = key(&format!("shared-{n}"));
                    start.wait().await;
                    loop {
                        match store.claim(&key, fp(), WRITE).await {
                            Ok(Claim::Acquired(lease)) => {
                                runs[n].fetch_add(1, Ordering::SeqCst);
                                sleep(Duration::from_millis(20)).await;
                                let id = format!("exec_{replica}_{claim}");
                                store.finish(&lease, recorded(&id)).await.unwrap();
                                return (n, id);
                            }
                            Ok(Claim::Finished(outcome)) => {
                                return (n, outcome.execution_id.to_string());
                            }
                            Ok(Claim::Running(waiter)) => timeout(Duration::from_secs(10), waiter)
                                .await
                                .expect("a waiter was never woken"),
                            other => panic!("a replica's claim got {other:?}"),
                        }
                    }
                }));
            }
        }
    }
    let mut ids: HashMap<usize, Vec<String>> = HashMap::new();
    for claim in claims {
        let (n, id) = claim.await.unwrap();
        ids.entry(n).or_default().push(id);
    }
    for (n, runs) in runs.iter().enumerate() {
        assert_eq!(runs.load(Ordering::SeqCst), 1, "key {n} ran more than once");
        let seen = &ids[&n];
        assert_eq!(seen.len(), REPLICAS * CLAIMS);
        assert!(
            seen.iter().all(|id| id == &seen[0]),
            "key {n} answered {seen:?}"
        );
    }
}

/// A replica dies holding claims (its store dropped, its connections closed): once the leases
/// run out, another replica finds the write uncertain and the read free, and the dead one's
/// leases are lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_replicas_leases_settle_by_their_terms() {
    const LEASE: Duration = Duration::from_millis(400);
    let Some(server) = Postgres::shared() else {
        return;
    };
    let options = PostgresStoreOptions::default().with_schema(schema("dead"));
    let dead = PostgresStore::connect_with(
        &format!("{}?application_name=dead_replica", server.url()),
        options.clone(),
    )
    .await
    .unwrap();
    let survivor = open(server, options).await;
    let write_lease = acquire(&dead, &key("write"), write(LEASE)).await;
    let read_lease = acquire(&dead, &key("read"), read(LEASE)).await;
    let started = Instant::now();
    drop(dead);

    let Ok(Claim::Running(waiter)) = survivor.claim(&key("write"), fp(), WRITE).await else {
        panic!("the dead replica's lease still holds");
    };
    timeout(LEASE + Duration::from_secs(3), waiter)
        .await
        .expect("the waiter outlived the dead replica's lease");
    assert!(
        started.elapsed() >= LEASE - Duration::from_millis(100),
        "the waiter resolved before the lease ran out"
    );
    assert!(matches!(
        survivor.claim(&key("write"), fp(), WRITE).await,
        Ok(Claim::Uncertain(ExecutionStatus::Lost))
    ));
    let again = acquire(&survivor, &key("read"), WRITE).await;
    assert_ne!(again, read_lease);
    for lease in [&write_lease, &read_lease] {
        assert!(matches!(
            survivor.finish(lease, recorded("exec_late")).await,
            Err(StoreError::LeaseLost)
        ));
    }
    survivor
        .finish(&again, recorded("exec_again"))
        .await
        .unwrap();
    // Nothing of the dead replica stays connected.
    let deadline = Instant::now() + Duration::from_secs(3);
    while number(
        server,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dead_replica'",
    ) > 0
    {
        assert!(
            Instant::now() < deadline,
            "the dropped store kept its connections"
        );
        sleep(Duration::from_millis(50)).await;
    }
}

/// Settled keys go once their retention has passed, expired leases settle, and the background
/// sweep does both with nobody claiming; the counts follow the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settled_keys_are_forgotten_after_retention_and_swept_in_the_background() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("retention");
    let options = PostgresStoreOptions::default()
        .with_schema(&schema)
        .with_ttl(Duration::from_secs(1))
        .with_sweep_interval(Duration::from_millis(50));
    let store = open(server, options).await;
    for n in 0..5 {
        let lease = acquire(&store, &key(&format!("old-{n}")), WRITE).await;
        store.finish(&lease, recorded("exec_old")).await.unwrap();
    }
    let lease = acquire(&store, &key("uncertain"), WRITE).await;
    store
        .release(&lease, Release::Uncertain(ExecutionStatus::TimedOut))
        .await
        .unwrap();
    acquire(
        &store,
        &key("abandoned-read"),
        read(Duration::from_millis(500)),
    )
    .await;
    acquire(
        &store,
        &key("abandoned-write"),
        write(Duration::from_millis(500)),
    )
    .await;
    let rows = format!("SELECT count(*) FROM {schema}.claims");
    assert_eq!(number(server, &rows), 8);
    assert!(counts_match_rows(server, &schema));
    // Nobody claims: the sweep alone settles and forgets them (the lost write after its
    // retention, counted from its lease's expiry).
    let deadline = Instant::now() + Duration::from_secs(5);
    while number(server, &rows) > 0 {
        assert!(Instant::now() < deadline, "the sweep left rows behind");
        sleep(Duration::from_millis(50)).await;
    }
    assert!(counts_match_rows(server, &schema));
    assert_eq!(
        number(server, &format!("SELECT count(*) FROM {schema}.shares")),
        0
    );
    // And a forgotten key runs anew.
    acquire(&store, &key("old-0"), WRITE).await;
}

/// A backlog much larger than one batch is cleared by one `sweep()`, a batch per transaction,
/// and every count follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_backlog_is_swept_in_batches() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("backlog");
    let store = open(server, PostgresStoreOptions::default().with_schema(&schema)).await;
    let live = acquire(&store, &key("live"), WRITE).await;
    // Expired leases of seven principals, written behind the store's back (the triggers still
    // count them): reads to forget, and writes to keep as uncertain.
    server.sql(&format!(
        "INSERT INTO {schema}.claims \
         (principal, request_id, fingerprint, state, token, if_lost, expires_at, bytes) \
         SELECT convert_to('p' || (n % 7), 'UTF8'), convert_to('r' || n, 'UTF8'), '\\x00', 0, \
                '\\x0102', CASE WHEN n % 2 = 0 THEN 'lost' END, \
                statement_timestamp() - interval '1 second', 150 \
         FROM generate_series(1, 1700) AS n"
    ));
    assert!(counts_match_rows(server, &schema));
    store.sweep().await.unwrap();
    let held = format!("SELECT count(*) FROM {schema}.claims WHERE state = 0");
    let uncertain = format!("SELECT count(*) FROM {schema}.claims WHERE state = 2");
    assert_eq!(
        number(server, &held),
        1,
        "only the live claim is still held"
    );
    assert_eq!(number(server, &uncertain), 850);
    assert!(counts_match_rows(server, &schema));
    store.finish(&live, recorded("exec_live")).await.unwrap();
}

/// Per principal, the bound is exact even when three replicas claim at once; a principal at its
/// bound keeps everything it holds and leaves the others alone. The totals may pass theirs by no
/// more than the claims committing at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounds_fail_closed_across_replicas_and_the_counts_match_the_rows() {
    const REPLICAS: usize = 3;
    const POOL: usize = 4;
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("bounds");
    let options = PostgresStoreOptions::default()
        .with_schema(&schema)
        .with_pool_size(POOL)
        .with_request_ids(|ids| ids.with_max_per_principal(10).with_max(40));
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        replicas.push(Arc::new(open(server, options.clone()).await));
    }
    let claim_all = |principal: &'static str, count: usize| {
        let claims: Vec<_> = (0..count)
            .map(|n| {
                let store = Arc::clone(&replicas[n % REPLICAS]);
                tokio::spawn(async move {
                    let key = IdempotencyKey::new(Some(principal), &format!("r-{n}"));
                    match store.claim(&key, fp(), WRITE).await {
                        Ok(Claim::Acquired(_)) => true,
                        Err(StoreError::Full(_)) => false,
                        other => panic!("{other:?}"),
                    }
                })
            })
            .collect();
        async move {
            let mut acquired = 0;
            for claim in claims {
                acquired += usize::from(claim.await.unwrap());
            }
            acquired
        }
    };
    assert_eq!(claim_all("alice", 60).await, 10, "alice's share is 10 keys");
    assert!(matches!(
        replicas[0]
            .claim(&IdempotencyKey::new(Some("alice"), "r-0"), fp(), WRITE)
            .await,
        Ok(Claim::Running(_)) | Err(StoreError::Full(_))
    ));
    assert_eq!(claim_all("bob", 10).await, 10, "bob has a share of his own");
    assert!(counts_match_rows(server, &schema));
    // 20 keys held of 40: a crowd of principals claiming at once gets at least the 20 left,
    // and at most as many more as could commit together.
    let claims: Vec<_> = (0..60)
        .map(|n| {
            let store = Arc::clone(&replicas[n % REPLICAS]);
            tokio::spawn(async move {
                let key = IdempotencyKey::new(Some(&format!("crowd-{n}")), "r");
                match store.claim(&key, fp(), WRITE).await {
                    Ok(Claim::Acquired(_)) => true,
                    Err(StoreError::Full(_)) => false,
                    other => panic!("{other:?}"),
                }
            })
        })
        .collect();
    let mut acquired = 0;
    for claim in claims {
        acquired += usize::from(claim.await.unwrap());
    }
    assert!(
        (20..=20 + REPLICAS * POOL).contains(&acquired),
        "{acquired} claims acquired with 20 keys of room"
    );
    assert!(counts_match_rows(server, &schema));
    assert!(matches!(
        replicas[1].claim(&key("one-more"), fp(), WRITE).await,
        Err(StoreError::Full(_))
    ));
}

/// Three replicas under a mixed load meant to cross every path at once: short leases left to
/// expire, finishes, releases both ways, full shares settling their own backlog, full totals
/// sweeping for room, and background sweeps every few milliseconds. Nothing may fail but with
/// `Full`; a deadlock or a timeout would be `Unavailable`. Then the counts still match the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_load_on_three_replicas_never_fails_but_full() {
    const REPLICAS: usize = 3;
    const TASKS: usize = 60;
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("mixed");
    let options = PostgresStoreOptions::default()
        .with_schema(&schema)
        .with_ttl(Duration::from_millis(150))
        .with_sweep_interval(Duration::from_millis(20))
        .with_request_ids(|ids| ids.with_max_per_principal(12).with_max(40));
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        replicas.push(Arc::new(open(server, options.clone()).await));
    }
    let until = Instant::now() + Duration::from_millis(1500);
    let (claims, full) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = Arc::clone(&replicas[task % REPLICAS]);
            let (claims, full) = (Arc::clone(&claims), Arc::clone(&full));
            tokio::spawn(async move {
                // A small generator of its own per task: the test needs variety, not quality.
                let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ (task as u64 + 1);
                let mut next = move |below: u64| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state % below
                };
                while Instant::now() < until {
                    let principal = format!("p{}", next(4));
                    let key = IdempotencyKey::new(Some(&principal), &format!("k{}", next(20)));
                    let lease = Duration::from_millis(30 + next(60));
                    let terms = if next(2) == 0 {
                        write(lease)
                    } else {
                        read(lease)
                    };
                    claims.fetch_add(1, Ordering::Relaxed);
                    match store.claim(&key, fp(), terms).await {
                        Ok(Claim::Acquired(lease)) => {
                            sleep(Duration::from_millis(next(10))).await;
                            let settled = match next(4) {
                                0 => store.finish(&lease, recorded("exec_mixed")).await,
                                1 => store.release(&lease, Release::Retry).await,
                                2 => {
                                    let status = Release::Uncertain(ExecutionStatus::TimedOut);
                                    store.release(&lease, status).await
                                }
                                // Abandoned: its lease runs out.
                                _ => Ok(()),
                            };
                            match settled {
                                Ok(()) | Err(StoreError::LeaseLost) => {}
                                Err(error) => panic!("settling a claim failed: {error:?}"),
                            }
                        }
                        Ok(Claim::Running(waiter)) => {
                            timeout(Duration::from_secs(3), waiter)
                                .await
                                .expect("a waiter outlived every lease");
                        }
                        Ok(_) => {}
                        Err(StoreError::Full(_)) => {
                            full.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(error) => panic!("a claim failed: {error:?}"),
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    for store in &replicas {
        store.sweep().await.unwrap();
    }
    assert!(counts_match_rows(server, &schema));
    let (claims, full) = (claims.load(Ordering::Relaxed), full.load(Ordering::Relaxed));
    assert!(
        claims > 200 && full > 0,
        "{claims} claims, {full} refused as full"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_outcome_is_kept_as_a_note_and_shares_stay_bounded() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("outcomes");
    let store = open(
        server,
        PostgresStoreOptions::default()
            .with_schema(&schema)
            .with_request_ids(|ids| {
                ids.with_max_outcome_bytes(64 << 10)
                    .with_max_bytes_per_principal(1 << 20)
            }),
    )
    .await;
    let big = Recorded::new(
        ExecutionId::from("exec_big"),
        ExecutionStatus::Succeeded,
        Ok(json!({ "report": "x".repeat(1 << 20) })),
    );
    let lease = acquire(&store, &key("report"), WRITE).await;
    store.finish(&lease, big).await.unwrap();
    let Ok(Claim::Finished(note)) = store.claim(&key("report"), fp(), WRITE).await else {
        panic!("the call ran: its retry must not run it again");
    };
    assert_eq!(note.execution_id.as_str(), "exec_big");
    let error = note.result.unwrap_err();
    assert_eq!(error.code(), "OUTCOME_NOT_KEPT");
    let (mut kept, mut noted, mut refused) = (0, 0, 0);
    for n in 0..40 {
        let key = key(&format!("r-{n}"));
        let lease = match store.claim(&key, fp(), WRITE).await {
            Ok(Claim::Acquired(lease)) => lease,
            Err(StoreError::Full(_)) => {
                refused += 1;
                continue;
            }
            other => panic!("{other:?}"),
        };
        let outcome = Recorded::new(
            ExecutionId::from("e"),
            ExecutionStatus::Succeeded,
            Ok(json!("y".repeat(60 << 10))),
        );
        store.finish(&lease, outcome).await.unwrap();
        match store.claim(&key, fp(), WRITE).await {
            Ok(Claim::Finished(replayed)) if replayed.result.is_ok() => kept += 1,
            Ok(Claim::Finished(_)) => noted += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(
        (14..=17).contains(&kept),
        "{kept} outcomes of 60 KiB kept in 1 MiB"
    );
    assert!(
        noted >= 1 && refused >= 1,
        "{noted} noted, {refused} refused"
    );
    // A note is kept even past the bound (the call ran and must not run again), so the share
    // may exceed it by a note's few hundred bytes, and no more.
    let weight = number(
        server,
        &format!("SELECT bytes FROM {schema}.shares WHERE principal = 'alice'"),
    );
    assert!(
        weight <= (1 << 20) + 1024,
        "{weight} bytes kept in a share of 1 MiB"
    );
    assert!(counts_match_rows(server, &schema));
}

/// Replicas starting at once create the layout once; connecting again migrates nothing and
/// keeps every record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_connects_create_the_layout_once_and_reconnecting_keeps_it() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("migrate");
    let options = PostgresStoreOptions::default().with_schema(&schema);
    let url = server.url();
    let connects: Vec<_> = (0..6)
        .map(|_| {
            let (url, options) = (url.clone(), options.clone());
            tokio::spawn(async move { PostgresStore::connect_with(&url, options).await })
        })
        .collect();
    let mut stores = Vec::new();
    for connect in connects {
        stores.push(connect.await.unwrap().expect("every replica connects"));
    }
    assert_eq!(
        server.sql(&format!("SELECT version FROM {schema}.meta")),
        "6"
    );
    let lease = acquire(&stores[0], &key("kept"), WRITE).await;
    stores[1]
        .finish(&lease, recorded("exec_kept"))
        .await
        .unwrap();
    drop(stores);
    let store = open(server, options).await;
    match store.claim(&key("kept"), fp(), WRITE).await {
        Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_kept")),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        number(
            server,
            &format!("SELECT count(*) FROM pg_tables WHERE schemaname = '{schema}'")
        ),
        12
    );
    for totals in ["totals", "task_totals"] {
        assert_eq!(
            number(server, &format!("SELECT count(*) FROM {schema}.{totals}")),
            64
        );
    }
}

/// A layout newer than this code, a schema that is not a store's, and options that cannot be
/// honoured are refused at connect, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_or_foreign_schema_and_bad_options_are_refused() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let newer = schema("newer");
    drop(open(server, PostgresStoreOptions::default().with_schema(&newer)).await);
    server.sql(&format!("UPDATE {newer}.meta SET version = 99"));
    let refused = |result: Result<PostgresStore, StoreError>| match result {
        Err(error @ StoreError::Unavailable(_)) => error.to_string(),
        other => panic!("expected Unavailable, got {other:?}"),
    };
    let message = refused(
        PostgresStore::connect_with(
            &server.url(),
            PostgresStoreOptions::default().with_schema(&newer),
        )
        .await,
    );
    assert!(message.contains("newer"), "{message}");

    let foreign = schema("foreign");
    server.sql(&format!(
        "CREATE SCHEMA {foreign}; CREATE TABLE {foreign}.meta (id int); \
         CREATE TABLE {foreign}.claims (id int)"
    ));
    let message = refused(
        PostgresStore::connect_with(
            &server.url(),
            PostgresStoreOptions::default().with_schema(&foreign),
        )
        .await,
    );
    assert!(
        message.contains("not a carmy store") || message.contains("version"),
        "{message}"
    );

    for bad in ["", "Upper", "1st", "pg_store", "a-b", "semi;colon"] {
        refused(
            PostgresStore::connect_with(
                &server.url(),
                PostgresStoreOptions::default().with_schema(bad),
            )
            .await,
        );
    }
    refused(
        PostgresStore::connect_with(
            &server.url(),
            PostgresStoreOptions::default().with_statement_timeout(Duration::ZERO),
        )
        .await,
    );
    refused(PostgresStore::connect("not a connection string at all=").await);
}

/// A waiter on another replica's claim is woken by the server's announcement: long after its
/// polls have slowed to one every two seconds, the finish reaches it in a moment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_woken_by_another_replicas_finish_through_notify() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let options = PostgresStoreOptions::default().with_schema(schema("notify"));
    let holder = open(server, options.clone()).await;
    let waiter_side = open(server, options).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !format!("{waiter_side:?}").contains("listening: true") {
        assert!(Instant::now() < deadline, "the store never listened");
        sleep(Duration::from_millis(20)).await;
    }
    let lease = acquire(&holder, &key("announced"), WRITE).await;
    let Ok(Claim::Running(mut waiter)) = waiter_side.claim(&key("announced"), fp(), WRITE).await
    else {
        panic!("the other replica's claim must be seen running");
    };
    // Polls at 10, 30, 70 ... 1270, 2550 ms; the next is two seconds after that.
    assert!(
        timeout(Duration::from_millis(2700), &mut waiter)
            .await
            .is_err(),
        "the waiter resolved while the claim still held"
    );
    let finished = Instant::now();
    holder
        .finish(&lease, recorded("exec_announced"))
        .await
        .unwrap();
    timeout(Duration::from_secs(3), waiter).await.unwrap();
    let noticed = finished.elapsed();
    assert!(
        noticed < Duration::from_millis(600),
        "the waiter took {noticed:?}: it polled, it was not told"
    );
}

/// A lock held on the table ends a claim at the statement timeout, and an exhausted pool ends
/// the next at the connect timeout: both fail closed, and both serve once the lock goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_and_an_exhausted_pool_fail_closed_in_bounded_time() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("locked");
    let store = Arc::new(
        open(
            server,
            PostgresStoreOptions::default()
                .with_schema(&schema)
                .with_pool_size(1)
                .with_connect_timeout(Duration::from_millis(200))
                .with_statement_timeout(Duration::from_millis(800)),
        )
        .await,
    );
    let (blocker, connection) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    blocker
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE {schema}.claims IN ACCESS EXCLUSIVE MODE"
        ))
        .await
        .unwrap();

    let started = Instant::now();
    let blocked = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.claim(&key("blocked"), fp(), WRITE).await })
    };
    sleep(Duration::from_millis(100)).await;
    // The only connection waits on the lock: this claim cannot get one.
    let queued = Instant::now();
    let answer = store.claim(&key("queued"), fp(), WRITE).await;
    assert!(
        matches!(answer, Err(StoreError::Unavailable(_))),
        "{answer:?}"
    );
    assert!(
        queued.elapsed() < Duration::from_millis(600),
        "an exhausted pool took {:?} to fail the call",
        queued.elapsed()
    );
    let answer = blocked.await.unwrap();
    assert!(
        matches!(answer, Err(StoreError::Unavailable(_))),
        "{answer:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "a held lock took {:?} to fail the call",
        started.elapsed()
    );

    blocker.batch_execute("COMMIT").await.unwrap();
    acquire(&store, &key("blocked"), WRITE).await;
    acquire(&store, &key("queued"), WRITE).await;
}

/// A store shared by runtimes (as the replicas of one process share it) keeps serving when one of
/// them stops being driven: the connections that runtime's calls made are the store's, made and
/// driven on the runtime the store was connected on, so the others' calls that take them from
/// the pool do not hang on a runtime nobody runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_made_for_another_runtime_outlive_its_driving() {
    const CALLS: usize = 8;
    let Some(server) = Postgres::shared() else {
        return;
    };
    let options = PostgresStoreOptions::default()
        .with_schema(schema("runtimes"))
        .with_statement_timeout(Duration::from_secs(1));
    let store = Arc::new(open(server, options).await);
    let (idle, stop) = std::sync::mpsc::channel::<()>();
    let other = Arc::clone(&store);
    let (ran, done) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Calls at once, so the pool makes connections for them; then the runtime idles.
        runtime.block_on(async {
            let calls: Vec<_> = (0..CALLS)
                .map(|n| {
                    let store = Arc::clone(&other);
                    tokio::spawn(async move {
                        store.claim(&key(&format!("idle-{n}")), fp(), WRITE).await
                    })
                })
                .collect();
            for call in calls {
                assert!(matches!(call.await.unwrap(), Ok(Claim::Acquired(_))));
            }
        });
        ran.send(()).unwrap();
        let _ = stop.recv();
        drop(runtime);
    });
    tokio::task::spawn_blocking(move || done.recv().unwrap())
        .await
        .unwrap();
    let started = Instant::now();
    let calls: Vec<_> = (0..CALLS)
        .map(|n| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.claim(&key(&format!("busy-{n}")), fp(), WRITE).await })
        })
        .collect();
    for call in calls {
        let answer = call.await.unwrap();
        assert!(matches!(answer, Ok(Claim::Acquired(_))), "{answer:?}");
    }
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "the calls took {:?}",
        started.elapsed()
    );
    drop(idle);
    tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
}

/// A server nobody listens on fails the connect at once; no password is ever printed, neither
/// in an error nor in the store's `Debug`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_fails_at_once_and_no_password_is_printed() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let error = PostgresStore::connect_with(
        &format!("postgres://carmy:hunter2-secret@127.0.0.1:{port}/app"),
        PostgresStoreOptions::default().with_connect_timeout(Duration::from_secs(2)),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    for text in [error.to_string(), format!("{error:?}")] {
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("127.0.0.1"), "{text}");
    }

    let Some(server) = Postgres::shared() else {
        return;
    };
    // The server trusts local connections, so any password is accepted (and must not show).
    let url = format!(
        "postgres://postgres:hunter2-secret@127.0.0.1:{}/postgres",
        server.port()
    );
    let store = PostgresStore::connect_with(
        &url,
        PostgresStoreOptions::default().with_schema(schema("debug")),
    )
    .await
    .unwrap();
    let shown = format!("{store:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("postgres@127.0.0.1"), "{shown}");
}

fn at(collection: &str, key: &str) -> RecordKey {
    RecordKey::new(collection, key)
}

fn put(key: RecordKey, value: Value) -> Changes {
    Changes {
        writes: vec![(key, Some(value))],
        ..Changes::default()
    }
}

async fn read_record(store: &PostgresStore, key: &RecordKey) -> Versioned {
    store
        .read(key)
        .await
        .unwrap_or_else(|error| panic!("reading {key:?} failed: {error}"))
}

/// The pause after the `attempt`-th conflict, as the runtime takes it: doubling from 1 ms up to
/// 64 ms, with jitter so writers that collided do not collide again in step.
fn pause_after(attempt: u32, next: &mut impl FnMut(u64) -> u64) -> Duration {
    let ceiling = (1u64 << attempt.min(6)) * 1000;
    Duration::from_micros(ceiling / 2 + next(ceiling / 2 + 1))
}

/// A small generator per task: the tests need variety, not quality.
fn generator(seed: usize) -> impl FnMut(u64) -> u64 {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ (seed as u64 + 1);
    move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    }
}

/// Three replicas, four writers each, increment one counter and add an event per increment,
/// retrying on conflict as the runtime does. Some commits also check a collection that others
/// write into (locks of both modes on two collections, in either order of need), list one, or
/// finish a claim of one principal with their writes (its claim row locked before the
/// collections, its share after). Every increment lands exactly once, every commit is `Done`
/// or `Conflict`, and the server broke no deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_committing_at_once_lose_no_update_and_never_deadlock() {
    const REPLICAS: usize = 3;
    const WRITERS: usize = 12;
    const EACH: usize = 25;
    let Some(server) = Postgres::shared() else {
        return;
    };
    // A database of its own: its count of deadlocks is this test's alone.
    let database = schema("commits");
    let url = server.create_database(&database);
    let options = PostgresStoreOptions::default().with_schema("records");
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        let store = PostgresStore::connect_with(&url, options.clone()).await;
        replicas.push(Arc::new(store.expect("a replica")));
    }
    let counter = at("counters", "orders");
    let conflicts = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let store = Arc::clone(&replicas[writer % REPLICAS]);
            let (counter, conflicts) = (counter.clone(), Arc::clone(&conflicts));
            tokio::spawn(async move {
                let mut next = generator(writer);
                for i in 0..EACH {
                    let name = format!("w{writer}-{i}");
                    let claimed = if i % 3 == 0 {
                        Some((
                            key(&name),
                            acquire(&store, &key(&name), read(Duration::from_secs(60))).await,
                        ))
                    } else {
                        None
                    };
                    let outcome = recorded(&format!("exec_{name}"));
                    let mut attempt = 0;
                    loop {
                        let seen = read_record(&store, &counter).await;
                        let n = seen.value.as_ref().and_then(Value::as_u64).unwrap_or(0) + 1;
                        let mut changes = Changes {
                            reads: vec![(counter.clone(), seen.version)],
                            writes: vec![
                                (counter.clone(), Some(json!(n))),
                                (at("events", &name), Some(json!(n))),
                            ],
                            ..Changes::default()
                        };
                        let limits = at("config", "limits");
                        match i % 4 {
                            // Checks `config` (shared), then writes `counters` (exclusive).
                            1 => {
                                let seen = read_record(&store, &limits).await;
                                changes.reads.push((limits, seen.version));
                            }
                            // Writes both.
                            2 => {
                                let seen = read_record(&store, &limits).await;
                                changes.reads.push((limits.clone(), seen.version));
                                changes.writes.insert(0, (limits, Some(json!(n))));
                            }
                            // Lists `config`.
                            3 if writer % 2 == 0 => {
                                let listed = store.list("config").await.unwrap();
                                changes.listed.push(("config".to_owned(), listed.version));
                            }
                            _ => {}
                        }
                        tokio::task::yield_now().await;
                        let finish = claimed.as_ref().map(|(_, lease)| (lease, &outcome));
                        match store.commit(&changes, finish).await {
                            Ok(Committed::Done) => break,
                            Ok(Committed::Conflict) => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                                attempt += 1;
                                sleep(pause_after(attempt, &mut next)).await;
                            }
                            Err(error) => panic!("a commit failed: {error:?}"),
                        }
                    }
                    if let Some((key, _)) = claimed {
                        match store.claim(&key, fp(), WRITE).await {
                            Ok(Claim::Finished(kept)) => assert_eq!(kept, outcome),
                            other => panic!("{key:?} must replay its outcome, got {other:?}"),
                        }
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let elapsed = started.elapsed();
    let total = WRITERS * EACH;
    let store = &replicas[0];
    assert_eq!(read_record(store, &counter).await.value, Some(json!(total)));
    let events = store.list("events").await.unwrap().records;
    let mut increments: Vec<u64> = events.iter().map(|(_, n)| n.as_u64().unwrap()).collect();
    increments.sort_unstable();
    assert_eq!(increments, (1..=total as u64).collect::<Vec<_>>());
    let conflicts = conflicts.load(Ordering::Relaxed);
    assert!(
        conflicts > 0,
        "{total} commits in {elapsed:?} never contended"
    );
    eprintln!("{total} commits, {conflicts} conflicts, in {elapsed:?}");

    // The server counts the deadlocks it broke per database, once their sessions report:
    // closed sessions always have.
    drop(replicas);
    let deadline = Instant::now() + Duration::from_secs(5);
    while number(
        server,
        &format!("SELECT count(*) FROM pg_stat_activity WHERE datname = '{database}'"),
    ) > 0
    {
        assert!(
            Instant::now() < deadline,
            "the replicas kept their sessions"
        );
        sleep(Duration::from_millis(50)).await;
    }
    let deadlocks = number(
        server,
        &format!("SELECT deadlocks FROM pg_stat_database WHERE datname = '{database}'"),
    );
    assert_eq!(deadlocks, 0, "the server broke deadlocks between commits");
}

/// A commit under a lease that has run out races another replica's takeover of its key:
/// whichever locks the key's row first wins, and the commit's writes are kept exactly when its
/// outcome is (the successor then replays it). A commit that holds the key's row while it waits
/// for a collection keeps the takeover waiting, even past the lease's expiry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_racing_a_lease_expiry_and_takeover_applies_nothing_unless_it_held_the_key() {
    const LEASE: Duration = Duration::from_millis(100);
    const ROUNDS: usize = 12;
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("takeover");
    let options = PostgresStoreOptions::default().with_schema(&schema);
    let late = Arc::new(open(server, options.clone()).await);
    let successor = Arc::new(open(server, options).await);

    // Taken over first: the late commit applies nothing.
    let lease = acquire(&late, &key("taken"), read(LEASE)).await;
    sleep(LEASE + Duration::from_millis(50)).await;
    let taken = acquire(&successor, &key("taken"), read(Duration::from_secs(60))).await;
    let changes = put(at("orders", "taken"), json!("late"));
    assert!(matches!(
        late.commit(&changes, Some((&lease, &recorded("exec_late"))))
            .await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        read_record(&late, &at("orders", "taken")).await,
        Versioned::ABSENT
    );
    assert_eq!(late.list("orders").await.unwrap().version, 0);
    let committed = successor
        .commit(&changes, Some((&taken, &recorded("exec_successor"))))
        .await;
    assert_eq!(committed.unwrap(), Committed::Done);

    // Both at once, the lease just run out.
    let (mut won, mut lost) = (0, 0);
    for round in 0..ROUNDS {
        let name = format!("race-{round}");
        let lease = acquire(&late, &key(&name), read(LEASE)).await;
        sleep(LEASE + Duration::from_millis(20)).await;
        let changes = put(at("orders", &name), json!(round));
        let outcome = recorded(&format!("exec_{name}"));
        // Either side starts up to 1.5 ms after the other.
        let stagger = Duration::from_micros(500 * (round as u64 / 2 % 4));
        let (commit_after, takeover_after) = if round % 2 == 0 {
            (stagger, Duration::ZERO)
        } else {
            (Duration::ZERO, stagger)
        };
        let takeover = {
            let (successor, key) = (Arc::clone(&successor), key(&name));
            tokio::spawn(async move {
                sleep(takeover_after).await;
                successor
                    .claim(&key, fp(), read(Duration::from_secs(60)))
                    .await
            })
        };
        let commit = {
            let (late, outcome) = (Arc::clone(&late), outcome.clone());
            tokio::spawn(async move {
                sleep(commit_after).await;
                late.commit(&changes, Some((&lease, &outcome))).await
            })
        };
        let (committed, taken) = (commit.await.unwrap(), takeover.await.unwrap());
        let kept = read_record(&late, &at("orders", &name)).await;
        match (committed, taken) {
            (Ok(Committed::Done), Ok(Claim::Finished(replayed))) => {
                assert_eq!(replayed, outcome);
                assert_eq!(kept.value, Some(json!(round)));
                won += 1;
            }
            (Err(StoreError::LeaseLost), Ok(Claim::Acquired(_))) => {
                assert_eq!(kept, Versioned::ABSENT, "a lost commit left its writes");
                lost += 1;
            }
            other => panic!("round {round}: {other:?}"),
        }
    }
    eprintln!("{won} late commits won the race, {lost} lost it");

    // The late commit holds the key's row while it waits for `orders`: the takeover waits too.
    let (blocker, connection) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let lease = acquire(&late, &key("blocked"), read(LEASE)).await;
    blocker
        .batch_execute(&format!(
            "BEGIN; SELECT FROM {schema}.collections \
             WHERE collection = convert_to('orders', 'UTF8') FOR UPDATE"
        ))
        .await
        .unwrap();
    let outcome = recorded("exec_blocked");
    let commit = {
        let (late, outcome) = (Arc::clone(&late), outcome.clone());
        tokio::spawn(async move {
            let changes = put(at("orders", "blocked"), json!("late but first"));
            late.commit(&changes, Some((&lease, &outcome))).await
        })
    };
    sleep(LEASE * 3).await;
    let takeover = {
        let successor = Arc::clone(&successor);
        tokio::spawn(async move {
            successor
                .claim(&key("blocked"), fp(), read(Duration::from_secs(60)))
                .await
        })
    };
    sleep(Duration::from_millis(100)).await;
    assert!(!commit.is_finished() && !takeover.is_finished());
    blocker.batch_execute("COMMIT").await.unwrap();
    assert_eq!(commit.await.unwrap().unwrap(), Committed::Done);
    match takeover.await.unwrap() {
        Ok(Claim::Finished(replayed)) => assert_eq!(replayed, outcome),
        other => panic!("the takeover must wait for the commit, got {other:?}"),
    }
    assert!(counts_match_rows(server, &schema));
}

/// What takes a schema of this code's layout back to `layout`, as an older release left it: the
/// tables and functions later layouts add, dropped, and the version set back.
fn back_to_layout(schema: &str, layout: u8) -> String {
    let mut sql = String::new();
    if layout < 6 {
        sql.push_str(
            "DROP FUNCTION {s}.claim(bytea, bytea, bytea, bytea, text, int8, int8, int8, int8, \
             int8, int8); \
             DROP FUNCTION {s}.finish(bytea, bytea, bytea, text, text, int8, int8, int8, int8, \
             int8); ",
        );
    }
    if layout < 5 {
        sql.push_str(
            "DROP TABLE {s}.rate_buckets; \
             DROP FUNCTION {s}.take_rate(bytea, bytea, int8, int8); ",
        );
    }
    if layout < 4 {
        sql.push_str(
            "DROP TABLE {s}.redeemed, {s}.redeemers; \
             DROP FUNCTION {s}.redeem(bytea, int8, int8, int8, int8, int8, int8, int8); ",
        );
    }
    if layout < 3 {
        sql.push_str(
            "DROP TABLE {s}.tasks, {s}.task_shares, {s}.task_totals; \
             DROP FUNCTION {s}.count_task(), {s}.announce_task(); ",
        );
    }
    if layout < 2 {
        sql.push_str("DROP TABLE {s}.records, {s}.collections; DROP SEQUENCE {s}.record_stamp; ");
    }
    sql.push_str(&format!("UPDATE {{s}}.meta SET version = {layout}"));
    sql.replace("{s}", schema)
}

/// A schema at layout 1 (claims only), as the previous release left it, reached by three
/// replicas of this one at once: it is migrated once, in place; its claims are kept (a
/// finished key replays, a held lease still finishes) and it keeps records from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_1_schema_migrates_in_place_keeping_its_claims() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("layout1");
    let options = PostgresStoreOptions::default().with_schema(&schema);
    let old = open(server, options.clone()).await;
    let lease = acquire(&old, &key("finished"), WRITE).await;
    old.finish(&lease, recorded("exec_finished")).await.unwrap();
    let held = acquire(&old, &key("held"), WRITE).await;
    drop(old);
    server.sql(&back_to_layout(&schema, 1));

    let url = server.url();
    let connects: Vec<_> = (0..3)
        .map(|_| {
            let (url, options) = (url.clone(), options.clone());
            tokio::spawn(async move { PostgresStore::connect_with(&url, options).await })
        })
        .collect();
    let mut replicas = Vec::new();
    for connect in connects {
        replicas.push(connect.await.unwrap().expect("every replica connects"));
    }
    assert_eq!(
        server.sql(&format!("SELECT version FROM {schema}.meta")),
        "6"
    );
    match replicas[0].claim(&key("finished"), fp(), WRITE).await {
        Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_finished")),
        other => panic!("{other:?}"),
    }
    let committed = replicas[1]
        .commit(
            &put(at("orders", "after"), json!({ "n": 1 })),
            Some((&held, &recorded("exec_held"))),
        )
        .await;
    assert_eq!(committed.unwrap(), Committed::Done);
    let kept = read_record(&replicas[2], &at("orders", "after")).await;
    assert_eq!(kept.value, Some(json!({ "n": 1 })));
    match replicas[2].claim(&key("held"), fp(), WRITE).await {
        Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_held")),
        other => panic!("{other:?}"),
    }
    assert!(counts_match_rows(server, &schema));
}

/// Records committed before a crash are there after the restart, with their versions, and
/// stamps keep growing past them; while the server is down a commit (with an outcome or
/// without), a read and a listing fail closed in bounded time, and the lease held across the
/// outage commits once the server is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_survive_a_crash_and_commits_fail_closed_while_down() {
    const PATIENCE: Duration = Duration::from_secs(5);
    let Some(server) = Postgres::start() else {
        return;
    };
    let options = PostgresStoreOptions::default()
        .with_schema("records_outage")
        .with_connect_timeout(Duration::from_secs(1))
        .with_statement_timeout(Duration::from_secs(1));
    let store = open(&server, options).await;
    let before = Changes {
        writes: (0..5)
            .map(|n| (at("orders", &format!("ord-{n}")), Some(json!({ "n": n }))))
            .collect(),
        ..Changes::default()
    };
    assert_eq!(store.commit(&before, None).await.unwrap(), Committed::Done);
    let lease = acquire(&store, &key("paid"), read(Duration::from_secs(60))).await;
    let paid = put(at("payments", "pay-1"), json!(12.5));
    let committed = store
        .commit(&paid, Some((&lease, &recorded("exec_paid"))))
        .await;
    assert_eq!(committed.unwrap(), Committed::Done);
    let listed = store.list("orders").await.unwrap();
    let held = acquire(&store, &key("held"), read(Duration::from_secs(60))).await;

    server.crash();
    let down = |what: &str, answer: Result<Result<(), StoreError>, _>| match answer {
        Ok(Err(StoreError::Unavailable(_))) => {}
        other => panic!("{what} with the server down must fail closed in time: {other:?}"),
    };
    let during = put(at("orders", "during"), json!("down"));
    let answer = timeout(PATIENCE, store.commit(&during, None)).await;
    down("a commit", answer.map(|answer| answer.map(drop)));
    let answer = timeout(
        PATIENCE,
        store.commit(&during, Some((&held, &recorded("exec_held")))),
    )
    .await;
    down(
        "a commit with an outcome",
        answer.map(|answer| answer.map(drop)),
    );
    let answer = timeout(PATIENCE, store.read(&at("orders", "ord-1"))).await;
    down("a read", answer.map(|answer| answer.map(drop)));
    let answer = timeout(PATIENCE, store.list("orders")).await;
    down("a listing", answer.map(|answer| answer.map(drop)));

    server.restart();
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = loop {
        match store.list("orders").await {
            Ok(listing) => break listing,
            Err(StoreError::Unavailable(_)) if Instant::now() < deadline => {
                sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("the store did not serve again: {error}"),
        }
    };
    assert_eq!(after, listed, "the listing changed across the crash");
    let payment = read_record(&store, &at("payments", "pay-1")).await;
    assert_eq!(payment.value, Some(json!(12.5)));
    match store.claim(&key("paid"), fp(), WRITE).await {
        Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_paid")),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        read_record(&store, &at("orders", "during")).await,
        Versioned::ABSENT
    );
    let committed = store
        .commit(&during, Some((&held, &recorded("exec_held"))))
        .await;
    assert_eq!(committed.unwrap(), Committed::Done);
    let written = read_record(&store, &at("orders", "during")).await;
    assert!(written.version > payment.version && written.version > listed.version);
}

/// Two commits on two replicas, each having read as absent the record the other writes, in
/// collections nobody has touched yet (so no row exists to lock until a commit adds it): of
/// each pair exactly one commits, however they interleave. A write skew would commit both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_an_absent_record_conflicts_with_its_concurrent_insert() {
    const ROUNDS: usize = 30;
    let Some(server) = Postgres::shared() else {
        return;
    };
    let options = PostgresStoreOptions::default().with_schema(schema("absent"));
    let first = Arc::new(open(server, options.clone()).await);
    let second = Arc::new(open(server, options).await);
    for round in 0..ROUNDS {
        let (a, b) = (at(&format!("a{round}"), "x"), at(&format!("b{round}"), "y"));
        let skew = |store: &Arc<PostgresStore>, read: &RecordKey, write: &RecordKey| {
            let store = Arc::clone(store);
            let changes = Changes {
                reads: vec![(read.clone(), 0)],
                writes: vec![(write.clone(), Some(json!(round)))],
                ..Changes::default()
            };
            tokio::spawn(async move { store.commit(&changes, None).await.unwrap() })
        };
        let one = skew(&first, &a, &b);
        let other = skew(&second, &b, &a);
        let answers = [one.await.unwrap(), other.await.unwrap()];
        let done = answers.iter().filter(|&&c| c == Committed::Done).count();
        assert_eq!(done, 1, "round {round}: {answers:?}");
        let written = [
            read_record(&first, &a).await.value.is_some(),
            read_record(&first, &b).await.value.is_some(),
        ];
        assert_eq!(written.iter().filter(|&&w| w).count(), 1, "round {round}");
    }
}

/// A listing returns at most `MAX_LISTED` records: one more is refused as `Full`, not cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_past_max_listed_is_full_not_cut() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let store = open(
        server,
        PostgresStoreOptions::default().with_schema(schema("listing")),
    )
    .await;
    let many = Changes {
        writes: (0..=MAX_LISTED)
            .map(|n| (at("log", &format!("{n:05}")), Some(json!(n))))
            .collect(),
        ..Changes::default()
    };
    assert_eq!(store.commit(&many, None).await.unwrap(), Committed::Done);
    assert!(matches!(store.list("log").await, Err(StoreError::Full(_))));
    let one_less = Changes {
        writes: vec![(at("log", "00000"), None)],
        ..Changes::default()
    };
    assert_eq!(
        store.commit(&one_less, None).await.unwrap(),
        Committed::Done
    );
    let listing = store.list("log").await.unwrap();
    assert_eq!(listing.records.len(), MAX_LISTED);
    assert_eq!(listing.records[0], ("00001".to_owned(), json!(1)));
}

/// A commit that waits for a collection another session holds fails closed at the statement
/// timeout, applying nothing and leaving its lease held; once the lock goes, it commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_behind_a_held_collection_fails_closed_in_bounded_time() {
    let Some(server) = Postgres::shared() else {
        return;
    };
    let schema = schema("held_collection");
    let store = open(
        server,
        PostgresStoreOptions::default()
            .with_schema(&schema)
            .with_statement_timeout(Duration::from_millis(800)),
    )
    .await;
    let order = at("orders", "ord-1");
    assert_eq!(
        store
            .commit(&put(order.clone(), json!(1)), None)
            .await
            .unwrap(),
        Committed::Done
    );
    let (blocker, connection) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    blocker
        .batch_execute(&format!(
            "BEGIN; SELECT FROM {schema}.collections \
             WHERE collection = convert_to('orders', 'UTF8') FOR UPDATE"
        ))
        .await
        .unwrap();
    let lease = acquire(&store, &key("behind"), read(Duration::from_secs(60))).await;
    let changes = put(order.clone(), json!(2));
    let started = Instant::now();
    let answer = store
        .commit(&changes, Some((&lease, &recorded("exec_behind"))))
        .await;
    assert!(
        matches!(answer, Err(StoreError::Unavailable(_))),
        "{answer:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "a held collection took {:?} to fail the commit",
        started.elapsed()
    );
    assert_eq!(read_record(&store, &order).await.value, Some(json!(1)));
    assert!(matches!(
        store.claim(&key("behind"), fp(), WRITE).await,
        Ok(Claim::Running(_))
    ));
    blocker.batch_execute("COMMIT").await.unwrap();
    let committed = store
        .commit(&changes, Some((&lease, &recorded("exec_behind"))))
        .await;
    assert_eq!(committed.unwrap(), Committed::Done);
    assert_eq!(read_record(&store, &order).await.value, Some(json!(2)));
}

/// A transactional tool, as `#[tool(effect = "write", transactional)]` would make it: takes
/// the next order number from a counter and writes the order under its execution's id.
struct PlaceOrder {
    runs: Arc<AtomicUsize>,
}

impl Tool for PlaceOrder {
    type Input = NoInput;
    type Output = u64;
    const SPEC: ToolSpec = ToolSpec::new("place_order", Effect::Write).transactional(true);

    async fn run(&self, _: NoInput, invocation: Invocation) -> Result<u64, AgentError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let context = invocation.context();
        let records = context.records();
        let number = records.get::<u64>("counters", "orders").await?.unwrap_or(0) + 1;
        // Other calls run between the read and the commit, as they would on a busy server.
        sleep(Duration::from_millis(2)).await;
        records.put("counters", "orders", &number)?;
        let execution = context.execution_id().expect("a tool runs in an execution");
        records.put("orders", execution.as_str(), &number)?;
        Ok(number)
    }
}

/// Three runtimes on one database, each with a store of its own (replicas), take concurrent
/// calls of a transactional tool, each with its own request id, a third of them sent twice to
/// two different runtimes: each call's effect is committed exactly once, and the duplicate is
/// a replay with the same execution id and output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_calls_on_three_runtimes_take_effect_once_each() {
    const RUNTIMES: usize = 3;
    const CALLS: usize = 24;
    let Some(server) = Postgres::shared() else {
        return;
    };
    let options = PostgresStoreOptions::default().with_schema(schema("runtime"));
    let runs = Arc::new(AtomicUsize::new(0));
    let mut runtimes: Vec<Runtime> = Vec::new();
    for _ in 0..RUNTIMES {
        let tool = PlaceOrder {
            runs: Arc::clone(&runs),
        };
        let store = open(server, options.clone()).await;
        runtimes.push(Carmy::new().tool(tool).store(store).build().unwrap());
    }
    let started = Instant::now();
    let mut calls = Vec::new();
    for n in 0..CALLS {
        let sent_to = if n % 3 == 0 {
            vec![n % RUNTIMES, (n + 1) % RUNTIMES]
        } else {
            vec![n % RUNTIMES]
        };
        for runtime in sent_to {
            let runtime = runtimes[runtime].clone();
            calls.push(tokio::spawn(async move {
                let request = Request::new("place_order", json!({})).request_id(format!("o-{n}"));
                (n, runtime.execute(request).await)
            }));
        }
    }
    let mut answers: HashMap<usize, Vec<_>> = HashMap::new();
    for call in calls {
        let (n, outcome) = call.await.unwrap();
        answers.entry(n).or_default().push(outcome);
    }
    let elapsed = started.elapsed();

    let mut numbers = Vec::new();
    let mut executions = Vec::new();
    for (n, outcomes) in &answers {
        let first = &outcomes[0];
        let number: u64 = first.unwrap_output();
        for outcome in outcomes {
            assert_eq!(outcome.execution_id, first.execution_id, "call {n}");
            assert_eq!(outcome.unwrap_output::<u64>(), number, "call {n}");
        }
        let ran = outcomes
            .iter()
            .filter(|outcome| outcome.status == ExecutionStatus::Succeeded)
            .count();
        let replayed = outcomes
            .iter()
            .filter(|outcome| outcome.status == ExecutionStatus::Replayed)
            .count();
        assert_eq!((ran, replayed), (1, outcomes.len() - 1), "call {n}");
        numbers.push(number);
        executions.push(first.execution_id.to_string());
    }
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=CALLS as u64).collect::<Vec<_>>());

    let store = open(server, options).await;
    let counter = read_record(&store, &at("counters", "orders")).await;
    assert_eq!(counter.value, Some(json!(CALLS)));
    let mut orders: Vec<String> = store
        .list("orders")
        .await
        .unwrap()
        .records
        .into_iter()
        .map(|(execution, _)| execution)
        .collect();
    orders.sort_unstable();
    executions.sort_unstable();
    assert_eq!(
        orders, executions,
        "one order per call, under its execution"
    );
    eprintln!(
        "{CALLS} calls, {} sent twice, {} runs of the tool, in {elapsed:?}",
        CALLS.div_ceil(3),
        runs.load(Ordering::SeqCst)
    );
}

/// Tasks (`TaskStore`) on real servers: replicas cancelling and answering a task another holds,
/// its holder told through `NOTIFY`; a dropped replica's tasks failing after their lease; tasks
/// across a crash; a layout-2 schema migrated to layout 3; runtimes sharing tasks end to end.
/// (A module of its own: `TaskStore` and `IdempotencyStore` both have a `finish`.)
mod tasks {
    use std::{collections::BTreeMap, sync::Arc, time::Duration};

    use carmy_core::{
        AgentError, Ask, AskKind, Asked, Asker, Asks, Carmy, Claim, Context, Effect, ErrorCategory,
        ExecutionId, ExecutionStatus, Invocation, NewTask, NoInput, OutcomeKind, Recorded, Request,
        Runtime, StoreError, TaskEnding, TaskId, TaskKey, TaskLease, TaskRecord, TaskStatus,
        TaskStore, TaskSupport, Tool, ToolSpec, codes,
        records::{Committed, RecordStore},
    };
    use carmy_store::{PostgresStore, PostgresStoreOptions};
    use serde_json::{Value, json};
    use test_servers::Postgres;
    use tokio::time::{Instant, sleep, timeout};

    use super::{
        WRITE, acquire, at, back_to_layout, counts_match_rows, fp, key, number, open, put,
        read_record, recorded, schema,
    };

    const LONG: Duration = Duration::from_secs(60);
    const SHORT: Duration = Duration::from_millis(300);
    /// Well under the 2 s between a holder's polls while it listens: a change noticed within
    /// this was announced, not polled for.
    const PROMPT: Duration = Duration::from_millis(500);

    fn task(key: &TaskKey, ttl: Duration) -> NewTask {
        NewTask::new(
            key.clone(),
            "slow_compute",
            ExecutionId::from("exec_1"),
            ttl,
            Duration::from_millis(500),
        )
    }

    fn alice(id: &str) -> TaskKey {
        TaskKey::new(Some("alice"), id)
    }

    fn form(message: &str) -> Ask {
        Ask::input(message, json!({ "type": "object" }))
    }

    fn accept() -> Value {
        json!({ "action": "accept", "content": {} })
    }

    fn succeeded(value: Value) -> TaskEnding {
        TaskEnding::new(Recorded::new(
            ExecutionId::from("exec_1"),
            ExecutionStatus::Succeeded,
            Ok(value),
        ))
    }

    async fn create(
        store: &PostgresStore,
        key: &TaskKey,
        ttl: Duration,
        lease: Duration,
    ) -> TaskLease {
        store
            .create(task(key, ttl), lease)
            .await
            .expect("a task")
            .lease
    }

    async fn found(store: &PostgresStore, key: &TaskKey) -> TaskRecord {
        store
            .get(key)
            .await
            .expect("the store answers")
            .unwrap_or_else(|| panic!("task {key:?} was not found"))
    }

    /// Waits until every store listens, so that what they are told is announced, not polled.
    async fn listening(stores: &[&PostgresStore]) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !stores
            .iter()
            .all(|store| format!("{store:?}").contains("listening: true"))
        {
            assert!(Instant::now() < deadline, "a store never listened");
            sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether every task share and every task totals slot counts exactly the rows it stands
    /// for.
    fn task_counts_match_rows(server: &Postgres, schema: &str) -> bool {
        let shares = number(
            server,
            &format!(
                "SELECT count(*) FROM (SELECT principal, count(*) AS n, sum(bytes) AS b \
                 FROM {schema}.tasks GROUP BY principal) AS actual \
                 FULL JOIN {schema}.task_shares AS share USING (principal) \
                 WHERE actual.n IS DISTINCT FROM share.tasks OR actual.b IS DISTINCT FROM share.bytes"
            ),
        );
        let slots = number(
            server,
            &format!(
                "SELECT count(*) FROM (SELECT {schema}.slot_of(principal) AS slot, count(*) AS n, \
                 sum(bytes) AS b FROM {schema}.tasks GROUP BY 1) AS actual \
                 RIGHT JOIN {schema}.task_totals AS total USING (slot) \
                 WHERE coalesce(actual.n, 0) <> total.tasks OR coalesce(actual.b, 0) <> total.bytes"
            ),
        );
        shares == 0 && slots == 0
    }

    /// Resolves `changed` (armed before `write`), and says how long after the write it took.
    async fn told_after(
        changed: impl Future<Output = ()>,
        write: impl Future<Output = ()>,
    ) -> Duration {
        let mut changed = std::pin::pin!(changed);
        assert!(
            timeout(Duration::from_millis(100), &mut changed)
                .await
                .is_err(),
            "the holder was woken before anything was written"
        );
        write.await;
        let written = Instant::now();
        timeout(Duration::from_secs(5), changed)
            .await
            .expect("the holder was never woken");
        written.elapsed()
    }

    /// Three replicas: a task held by one is answered, one question at a time, from the other
    /// two, then cancelled; each write wakes the holder's `changed` at once, through the
    /// server's announcement (its polls are two seconds apart), and its next renewal reads it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_answer_and_cancel_a_task_another_holds_and_its_holder_is_told_at_once() {
        let Some(server) = Postgres::shared() else {
            return;
        };
        let options = PostgresStoreOptions::default().with_schema(schema("task_replicas"));
        let holder = open(server, options.clone()).await;
        let (b, c) = (
            open(server, options.clone()).await,
            open(server, options).await,
        );
        listening(&[&holder, &b, &c]).await;
        let key = alice("task_shared");
        let lease = create(&holder, &key, LONG, LONG).await;
        let two = Asks::new()
            .with("first.1", form("First?"))
            .with("second.2", form("Second?"));
        holder.ask(&lease, two).await.unwrap();
        assert_eq!(found(&b, &key).await.pending().count(), 2);

        let mut took = Vec::new();
        for (replica, question) in [(&b, "first.1"), (&c, "second.2")] {
            let answers = BTreeMap::from([(question.to_owned(), accept())]);
            let changed = holder.changed(&lease);
            took.push(
                told_after(changed, async {
                    let responded = replica.respond(&key, answers).await.unwrap().unwrap();
                    assert_eq!(responded.accepted, [question]);
                })
                .await,
            );
            let signals = holder.renew(&lease, LONG, None).await.unwrap();
            assert!(signals.answers.contains_key(question));
            assert!(!signals.cancel_requested);
        }
        assert_eq!(found(&c, &key).await.status, TaskStatus::Working);

        let changed = holder.changed(&lease);
        took.push(
            told_after(changed, async {
                let cancelled = c.cancel(&key).await.unwrap().unwrap();
                assert!(cancelled.cancel_requested);
            })
            .await,
        );
        let signals = holder.renew(&lease, LONG, None).await.unwrap();
        assert!(signals.cancel_requested);
        assert_eq!(signals.answers.len(), 2);
        for took in &took {
            assert!(
                *took < PROMPT,
                "the holder was told after {took:?}, as if it polled"
            );
        }

        // A renewal with nothing new leaves the holder waiting.
        let changed = holder.changed(&lease);
        assert!(timeout(Duration::from_millis(300), changed).await.is_err());
        let ending = TaskEnding::new(Recorded::new(
            ExecutionId::from("exec_1"),
            ExecutionStatus::Cancelled,
            Err(AgentError::new(
                ErrorCategory::Cancelled,
                codes::CANCELLED,
                "cancelled",
            )),
        ));
        holder.finish(&lease, ending).await.unwrap();
        assert_eq!(found(&b, &key).await.status, TaskStatus::Cancelled);
        eprintln!("the holder was told after {took:?}");
    }

    /// A replica dropped with tasks running leaves them to the others: once its leases run out,
    /// a read finds the task `failed` (`EXECUTION_LOST`), the sweep settles those nobody read
    /// and forgets those whose retention ran out too (counted from the lease's expiry), and the
    /// counts still match the rows.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_replicas_tasks_fail_after_their_lease() {
        let Some(server) = Postgres::shared() else {
            return;
        };
        let schema = schema("task_dropped");
        let options = PostgresStoreOptions::default().with_schema(&schema);
        let survivor = open(server, options.clone()).await;
        let dropped = open(server, options).await;
        let (read, unread, brief) = (
            alice("task_read"),
            alice("task_unread"),
            alice("task_brief"),
        );
        let lease = create(&dropped, &read, LONG, SHORT).await;
        create(&dropped, &unread, LONG, SHORT).await;
        create(&dropped, &brief, SHORT, SHORT).await;
        drop(dropped);
        assert_eq!(found(&survivor, &read).await.status, TaskStatus::Working);
        sleep(SHORT * 2 + Duration::from_millis(100)).await;

        let failed = found(&survivor, &read).await;
        assert_eq!(failed.status, TaskStatus::Failed);
        let outcome = failed.outcome.expect("a failed task says why");
        assert_eq!(outcome.status, ExecutionStatus::Lost);
        assert_eq!(outcome.result.unwrap_err().code(), codes::EXECUTION_LOST);
        assert!(matches!(
            survivor.renew(&lease, LONG, None).await,
            Err(StoreError::LeaseLost)
        ));
        let held = |id: &str| {
            number(
                server,
                &format!(
                    "SELECT count(*) FROM {schema}.tasks WHERE id = '{id}'::bytea \
                     AND token IS NOT NULL"
                ),
            )
        };
        assert_eq!(held("task_unread"), 1, "settled before the sweep");
        let forgotten = TaskStore::sweep(&survivor).await.unwrap();
        assert_eq!(forgotten, 1, "the task past its retention is forgotten");
        assert_eq!(held("task_unread"), 0);
        assert_eq!(found(&survivor, &unread).await.status, TaskStatus::Failed);
        assert!(survivor.get(&brief).await.unwrap().is_none());
        assert!(task_counts_match_rows(server, &schema));
    }

    /// Tasks committed before a crash are there after the restart, as they were; while the
    /// server is down every call fails closed in bounded time (and a holder's `changed` waits
    /// rather than spin), and the lease held across the outage is renewed and finished once the
    /// server is back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tasks_survive_a_crash_and_calls_fail_closed_while_down() {
        const PATIENCE: Duration = Duration::from_secs(5);
        let Some(server) = Postgres::start() else {
            return;
        };
        let options = PostgresStoreOptions::default()
            .with_schema("tasks_outage")
            .with_connect_timeout(Duration::from_secs(1))
            .with_statement_timeout(Duration::from_secs(1));
        let store = open(&server, options).await;
        let (done, waiting, running) = (
            alice("task_done"),
            alice("task_waiting"),
            alice("task_running"),
        );
        let lease = create(&store, &done, LONG, LONG).await;
        store
            .finish(&lease, succeeded(json!({ "n": 1 })))
            .await
            .unwrap();
        let asking = create(&store, &waiting, LONG, LONG).await;
        store
            .ask(&asking, Asks::new().with("confirm.1", form("Sure?")))
            .await
            .unwrap();
        let held = create(&store, &running, LONG, LONG).await;
        let before = [found(&store, &done).await, found(&store, &waiting).await];

        server.crash();
        async fn down<T: std::fmt::Debug>(
            what: &str,
            call: impl Future<Output = Result<T, StoreError>>,
        ) {
            match timeout(PATIENCE, call).await {
                Ok(Err(StoreError::Unavailable(_))) => {}
                other => panic!("{what} with the server down must fail closed in time: {other:?}"),
            }
        }
        let answers = || BTreeMap::from([("confirm.1".to_owned(), accept())]);
        down(
            "a create",
            store.create(task(&alice("task_new"), LONG), LONG),
        )
        .await;
        down("a read", store.get(&done)).await;
        down("a cancel", store.cancel(&running)).await;
        down("an answer", store.respond(&waiting, answers())).await;
        down("a renewal", store.renew(&held, LONG, None)).await;
        down("a question", store.ask(&held, Asks::new())).await;
        down("a finish", store.finish(&held, succeeded(json!(2)))).await;
        down("a sweep", TaskStore::sweep(&store)).await;
        assert!(
            timeout(Duration::from_secs(1), store.changed(&held))
                .await
                .is_err(),
            "a holder's wait ended while nothing could be read"
        );

        server.restart();
        let deadline = Instant::now() + Duration::from_secs(30);
        let after = loop {
            match store.get(&done).await {
                Ok(record) => break record,
                Err(StoreError::Unavailable(_)) if Instant::now() < deadline => {
                    sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("the store did not serve again: {error}"),
            }
        };
        assert_eq!(after.as_ref(), Some(&before[0]));
        assert_eq!(found(&store, &waiting).await, before[1]);
        assert!(store.get(&alice("task_new")).await.unwrap().is_none());
        let responded = store.respond(&waiting, answers()).await.unwrap().unwrap();
        assert_eq!(responded.accepted, ["confirm.1"]);
        store.renew(&held, LONG, None).await.unwrap();
        store.finish(&held, succeeded(json!(3))).await.unwrap();
        assert_eq!(found(&store, &running).await.status, TaskStatus::Completed);
    }

    /// A schema at layout 2 (claims and records), as the previous release left it, reached by
    /// three replicas of this one at once: migrated once, to layout 3, in place; its claims and
    /// records are kept, and it keeps tasks from then on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_layout_2_schema_migrates_to_3_keeping_claims_and_records() {
        let Some(server) = Postgres::shared() else {
            return;
        };
        let schema = schema("layout2");
        let options = PostgresStoreOptions::default().with_schema(&schema);
        let old = open(server, options.clone()).await;
        let lease = acquire(&old, &key("finished"), WRITE).await;
        carmy_core::IdempotencyStore::finish(&old, &lease, recorded("exec_finished"))
            .await
            .unwrap();
        let held = acquire(&old, &key("held"), WRITE).await;
        let order = at("orders", "before");
        let committed = old
            .commit(&put(order.clone(), json!({ "n": 1 })), None)
            .await;
        assert_eq!(committed.unwrap(), Committed::Done);
        let kept = read_record(&old, &order).await;
        drop(old);
        server.sql(&back_to_layout(&schema, 2));
        assert_eq!(
            number(
                server,
                &format!("SELECT count(*) FROM pg_tables WHERE schemaname = '{schema}'")
            ),
            6
        );

        let url = server.url();
        let connects: Vec<_> = (0..3)
            .map(|_| {
                let (url, options) = (url.clone(), options.clone());
                tokio::spawn(async move { PostgresStore::connect_with(&url, options).await })
            })
            .collect();
        let mut replicas = Vec::new();
        for connect in connects {
            replicas.push(connect.await.unwrap().expect("every replica connects"));
        }
        assert_eq!(
            server.sql(&format!("SELECT version FROM {schema}.meta")),
            "6"
        );
        match carmy_core::IdempotencyStore::claim(&replicas[0], &key("finished"), fp(), WRITE).await
        {
            Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_finished")),
            other => panic!("{other:?}"),
        }
        assert_eq!(read_record(&replicas[1], &order).await, kept);
        let committed = replicas[1]
            .commit(
                &put(at("orders", "after"), json!({ "n": 2 })),
                Some((&held, &recorded("exec_held"))),
            )
            .await;
        assert_eq!(committed.unwrap(), Committed::Done);
        match carmy_core::IdempotencyStore::claim(&replicas[2], &key("held"), fp(), WRITE).await {
            Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_held")),
            other => panic!("{other:?}"),
        }

        let task_key = TaskKey::new(Some("alice"), TaskId::generate());
        let lease = create(&replicas[0], &task_key, LONG, LONG).await;
        assert!(
            replicas[2]
                .cancel(&task_key)
                .await
                .unwrap()
                .unwrap()
                .cancel_requested
        );
        assert!(
            replicas[1]
                .renew(&lease, LONG, None)
                .await
                .unwrap()
                .cancel_requested
        );
        assert!(counts_match_rows(server, &schema));
        assert!(task_counts_match_rows(server, &schema));
    }

    /// Asks its caller to confirm, then says what it was told.
    struct Approve;

    impl Tool for Approve {
        type Input = NoInput;
        type Output = String;
        const SPEC: ToolSpec = ToolSpec::new("approve", Effect::Write).task(TaskSupport::Required);

        async fn run(&self, _: NoInput, invocation: Invocation) -> Result<String, AgentError> {
            let answer = invocation
                .context()
                .ask_input("confirm", "Go ahead?", json!({ "type": "object" }))
                .await?;
            Ok(answer.action.as_str().to_owned())
        }
    }

    /// Works, reporting progress, until it is cancelled (or a minute passes).
    struct Crunch;

    impl Tool for Crunch {
        type Input = NoInput;
        type Output = String;
        const SPEC: ToolSpec = ToolSpec::new("crunch", Effect::Write)
            .task(TaskSupport::Required)
            .timeout(Duration::from_secs(60));

        async fn run(&self, _: NoInput, invocation: Invocation) -> Result<String, AgentError> {
            invocation
                .context()
                .progress(1.0, Some(3.0), Some("crunching"));
            sleep(Duration::from_secs(60)).await;
            Ok("crunched".into())
        }
    }

    /// A client that can be asked anything (a task's questions go through the store).
    struct AnyClient;

    impl Asker for AnyClient {
        fn can_ask(&self, _: AskKind) -> bool {
            true
        }

        async fn ask(&self, _: &Asks) -> Asked {
            Asked::Refused(AgentError::internal("a task's questions go to its store"))
        }
    }

    fn as_alice(tool: &str, request_id: &str) -> Request {
        Request::new(tool, json!({}))
            .request_id(request_id)
            .allow_task()
            .asker(AnyClient)
            .context(Context::new().with_principal("alice"))
    }

    /// Reads the task on `runtime` until `done` holds (for up to five seconds).
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
            sleep(Duration::from_millis(10)).await;
        }
    }

    /// Two runtimes on one database, each with a store of its own for claims and tasks: a task
    /// started on one is read, answered and cancelled from the other, and the tool running on
    /// the first hears of it at once (its lease renews only every ten seconds); the call sent
    /// again to the other replica, once done, is a replay of the task's outcome.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tasks_started_on_one_runtime_are_read_answered_and_cancelled_from_another() {
        let Some(server) = Postgres::shared() else {
            return;
        };
        let options = PostgresStoreOptions::default().with_schema(schema("task_runtimes"));
        let mut runtimes = Vec::new();
        let mut stores = Vec::new();
        for _ in 0..2 {
            let store = Arc::new(open(server, options.clone()).await);
            stores.push(Arc::clone(&store));
            let runtime = Carmy::new()
                .tool(Approve)
                .tool(Crunch)
                .store(Arc::clone(&store))
                .task_store(store)
                .build()
                .expect("the replica's catalog");
            runtimes.push(runtime);
        }
        listening(&[&*stores[0], &*stores[1]]).await;
        let (a, b) = (&runtimes[0], &runtimes[1]);

        let started = a.execute(as_alice("approve", "approve-1")).await;
        let OutcomeKind::Task(task) = started.kind else {
            panic!("expected a task: {:?}", started.result);
        };
        let key = task.key;
        let waiting = until(b, &key, |record| record.status == TaskStatus::InputRequired).await;
        let question: Vec<String> = waiting.pending().map(|(key, _)| key.to_owned()).collect();
        assert_eq!(question.len(), 1);
        let answered = Instant::now();
        let responded = b
            .answer_task(&key, BTreeMap::from([(question[0].clone(), accept())]))
            .await
            .unwrap();
        assert_eq!(responded.accepted, question);
        let done = until(b, &key, |record| record.status.is_terminal()).await;
        let took = answered.elapsed();
        assert_eq!(done.status, TaskStatus::Completed);
        assert_eq!(done.outcome.unwrap().result.unwrap(), json!("accept"));
        assert!(
            took < Duration::from_secs(2),
            "the answer reached the tool after {took:?}"
        );
        let again = b.execute(as_alice("approve", "approve-1")).await;
        assert_eq!(again.status, ExecutionStatus::Replayed);
        assert_eq!(again.execution_id, started.execution_id);
        assert_eq!(again.unwrap_output::<String>(), "accept");

        let started = a.execute(as_alice("crunch", "crunch-1")).await;
        let OutcomeKind::Task(task) = started.kind else {
            panic!("expected a task: {:?}", started.result);
        };
        let key = task.key;
        let seen = until(b, &key, |record| record.progress.is_some()).await;
        assert_eq!(seen.status_message.as_deref(), Some("crunching"));
        let cancelled = Instant::now();
        b.cancel_task(&key).await.unwrap();
        let done = until(b, &key, |record| record.status.is_terminal()).await;
        let stopped = cancelled.elapsed();
        assert_eq!(done.status, TaskStatus::Cancelled);
        assert!(
            stopped < Duration::from_secs(2),
            "the cancel reached the tool after {stopped:?}"
        );
        assert_eq!(a.task(&key).await.unwrap().status, TaskStatus::Cancelled);
        // Another principal holding the id finds nothing, on either replica.
        let mallory = TaskKey::new(Some("mallory"), key.id().clone());
        for runtime in [a, b] {
            assert_eq!(
                runtime.task(&mallory).await.unwrap_err().code(),
                codes::TASK_NOT_FOUND
            );
        }
        eprintln!("an answer reached the tool in {took:?}, a cancel in {stopped:?}");
    }
}
