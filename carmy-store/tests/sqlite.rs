//! What the file store promises beyond the shared contract: several processes (here, several
//! connections) on one file, retention, bounds kept exactly, failing closed, staying off the
//! executor.

use std::{
    path::{Path, PathBuf},
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
use carmy_store::{SqliteStore, SqliteStoreOptions};
use serde_json::json;
use tokio::time::{sleep, timeout};

/// A directory of the test's own, removed when it ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "carmy-store-{name}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn file(&self) -> PathBuf {
        self.0.join("store.sqlite")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const WRITE: LeaseTerms = LeaseTerms {
    duration: Duration::from_secs(60),
    if_lost: Release::Uncertain(ExecutionStatus::Lost),
};

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

async fn acquire(store: &SqliteStore, key: &IdempotencyKey) -> Lease {
    match store.claim(key, fp(), WRITE).await {
        Ok(Claim::Acquired(lease)) => lease,
        other => panic!("expected to acquire {key:?}: {other:?}"),
    }
}

fn rows(path: &Path, sql: &str) -> i64 {
    let connection = rusqlite::Connection::open(path).unwrap();
    connection.query_row(sql, [], |row| row.get(0)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_sees_another_connections_finish_by_polling() {
    let scratch = Scratch::new("poll");
    let here = SqliteStore::open(scratch.file()).unwrap();
    let there = SqliteStore::open(scratch.file()).unwrap();
    let lease = acquire(&there, &key("shared")).await;
    let Ok(Claim::Running(waiter)) = here.claim(&key("shared"), fp(), WRITE).await else {
        panic!("another connection's claim must be seen running");
    };
    there.finish(&lease, recorded("exec_there")).await.unwrap();
    // `here` is never told: it must notice by polling, long before the 60 s lease runs out.
    timeout(Duration::from_secs(3), waiter)
        .await
        .expect("the waiter never noticed the other connection's finish");
    match here.claim(&key("shared"), fp(), WRITE).await {
        Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_there")),
        other => panic!("{other:?}"),
    }
}

/// Each connection has a thread of its own, as each process would: their claims of one key
/// race in SQLite itself, where only `BEGIN IMMEDIATE` keeps them apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_through_many_connections_have_one_winner() {
    const CONNECTIONS: usize = 6;
    const KEYS: usize = 30;
    let scratch = Scratch::new("connections");
    let stores: Vec<_> = (0..CONNECTIONS)
        .map(|_| Arc::new(SqliteStore::open(scratch.file()).unwrap()))
        .collect();
    let acquired: Arc<Vec<AtomicUsize>> =
        Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let claims: Vec<_> = stores
        .iter()
        .map(|store| {
            let (store, acquired) = (Arc::clone(store), Arc::clone(&acquired));
            tokio::spawn(async move {
                let claims = (0..KEYS).map(|n| {
                    let (store, acquired) = (Arc::clone(&store), Arc::clone(&acquired));
                    async move {
                        match store
                            .claim(&key(&format!("contended-{n}")), fp(), WRITE)
                            .await
                        {
                            Ok(Claim::Acquired(_)) => {
                                acquired[n].fetch_add(1, Ordering::SeqCst);
                            }
                            Ok(Claim::Running(_)) => {}
                            other => panic!("a concurrent claim got {other:?}"),
                        }
                    }
                });
                futures_join(claims).await;
            })
        })
        .collect();
    for claim in claims {
        claim.await.unwrap();
    }
    for (n, count) in acquired.iter().enumerate() {
        assert_eq!(count.load(Ordering::SeqCst), 1, "key {n}");
    }
}

/// Runs the futures concurrently (they queue on their connection's thread together).
async fn futures_join<F: std::future::Future<Output = ()> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) {
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    for task in tasks {
        task.await.unwrap();
    }
}

#[tokio::test]
async fn settled_keys_are_forgotten_after_retention_and_swept_in_the_background() {
    let scratch = Scratch::new("retention");
    let options = SqliteStoreOptions::default()
        .with_ttl(Duration::from_millis(200))
        .with_sweep_interval(Duration::from_millis(50));
    let store = SqliteStore::open_with(scratch.file(), options).unwrap();
    for n in 0..5 {
        let lease = acquire(&store, &key(&format!("old-{n}"))).await;
        store.finish(&lease, recorded("exec_old")).await.unwrap();
    }
    let lease = acquire(&store, &key("uncertain")).await;
    store
        .release(&lease, Release::Uncertain(ExecutionStatus::TimedOut))
        .await
        .unwrap();
    assert_eq!(
        rows(&scratch.file(), "SELECT count(*) FROM carmy_claims"),
        6
    );
    // Nobody claims: the sweep alone forgets them.
    sleep(Duration::from_millis(600)).await;
    assert_eq!(
        rows(&scratch.file(), "SELECT count(*) FROM carmy_claims"),
        0
    );
    assert_eq!(
        rows(&scratch.file(), "SELECT count(*) FROM carmy_shares"),
        0
    );
    assert_eq!(
        rows(&scratch.file(), "SELECT entries + bytes FROM carmy_totals"),
        0
    );
    // And a forgotten key runs anew.
    acquire(&store, &key("old-0")).await;
}

#[tokio::test]
async fn shares_and_totals_always_match_the_rows() {
    let scratch = Scratch::new("shares");
    let store = SqliteStore::open_with(
        scratch.file(),
        SqliteStoreOptions::default().with_ttl(Duration::from_millis(100)),
    )
    .unwrap();
    for principal in ["alice", "bob", ""] {
        for n in 0..6 {
            let key = IdempotencyKey::new(Some(principal), &format!("r-{n}"));
            let lease = acquire(&store, &key).await;
            match n % 3 {
                0 => store.finish(&lease, recorded("exec")).await.unwrap(),
                1 => store.release(&lease, Release::Retry).await.unwrap(),
                _ => {}
            }
        }
    }
    let consistent = |path: &Path| {
        rows(
            path,
            "SELECT count(*) FROM (SELECT principal, count(*) AS n, sum(bytes) AS b \
             FROM carmy_claims GROUP BY principal) AS actual \
             FULL JOIN carmy_shares USING (principal) \
             WHERE actual.n IS NOT carmy_shares.entries OR actual.b IS NOT carmy_shares.bytes",
        ) == 0
            && rows(
                path,
                "SELECT (SELECT count(*) FROM carmy_claims) = entries \
                 AND (SELECT total(bytes) FROM carmy_claims) = bytes FROM carmy_totals",
            ) == 1
    };
    assert!(consistent(&scratch.file()));
    assert_eq!(
        rows(&scratch.file(), "SELECT count(*) FROM carmy_shares"),
        3
    );
    sleep(Duration::from_millis(150)).await;
    store.sweep().await.unwrap();
    assert!(consistent(&scratch.file()));
    // Only the held claims are left (their leases hold).
    assert_eq!(
        rows(&scratch.file(), "SELECT count(*) FROM carmy_claims"),
        6
    );
}

#[tokio::test]
async fn a_large_outcome_is_kept_as_a_note_and_bytes_stay_bounded() {
    let scratch = Scratch::new("bytes");
    let store = SqliteStore::open_with(
        scratch.file(),
        SqliteStoreOptions::default()
            .with_max_outcome_bytes(64 << 10)
            .with_max_bytes_per_principal(1 << 20),
    )
    .unwrap();
    let big = Recorded::new(
        ExecutionId::from("exec_big"),
        ExecutionStatus::Succeeded,
        Ok(json!({ "report": "x".repeat(1 << 20) })),
    );
    let lease = acquire(&store, &key("report")).await;
    store.finish(&lease, big).await.unwrap();
    let Ok(Claim::Finished(note)) = store.claim(&key("report"), fp(), WRITE).await else {
        panic!("the call ran: its retry must not run it again");
    };
    assert_eq!(note.execution_id.as_str(), "exec_big");
    let error = note.result.unwrap_err();
    assert_eq!(error.code(), "OUTCOME_NOT_KEPT");
    assert_eq!(error.details().unwrap()["execution_id"], "exec_big");
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
    let weight = rows(
        &scratch.file(),
        "SELECT bytes FROM carmy_shares WHERE principal = 'alice'",
    );
    assert!(
        weight <= (1 << 20) + 1024,
        "{weight} bytes kept in a share of 1 MiB"
    );
}

#[tokio::test]
async fn a_locked_file_fails_closed_and_service_resumes() {
    let scratch = Scratch::new("locked");
    let store = SqliteStore::open_with(
        scratch.file(),
        SqliteStoreOptions::default().with_busy_timeout(Duration::from_millis(100)),
    )
    .unwrap();
    let blocker = rusqlite::Connection::open(scratch.file()).unwrap();
    blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    match store.claim(&key("blocked"), fp(), WRITE).await {
        Err(StoreError::Unavailable(_)) => {}
        other => panic!("a store that cannot write must fail closed, got {other:?}"),
    }
    blocker.execute_batch("COMMIT").unwrap();
    acquire(&store, &key("blocked")).await;
}

#[test]
fn a_blocked_store_never_blocks_the_executor() {
    let scratch = Scratch::new("executor");
    let store = SqliteStore::open_with(
        scratch.file(),
        SqliteStoreOptions::default().with_busy_timeout(Duration::from_millis(400)),
    )
    .unwrap();
    let blocker = rusqlite::Connection::open(scratch.file()).unwrap();
    blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    // One executor thread: if the claim blocked it while SQLite waits for the lock, the ticker
    // would not tick until the claim returned.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let ticks = Arc::new(AtomicUsize::new(0));
            let ticker = {
                let ticks = Arc::clone(&ticks);
                tokio::spawn(async move {
                    loop {
                        sleep(Duration::from_millis(20)).await;
                        ticks.fetch_add(1, Ordering::SeqCst);
                    }
                })
            };
            let claim = store.claim(&key("blocked"), fp(), WRITE).await;
            assert!(
                matches!(claim, Err(StoreError::Unavailable(_))),
                "{claim:?}"
            );
            let ticked = ticks.load(Ordering::SeqCst);
            assert!(ticked >= 5, "the executor ticked {ticked} times in 400 ms");
            ticker.abort();
        });
    drop(blocker);
}

#[test]
fn a_file_that_is_not_a_store_is_refused() {
    let scratch = Scratch::new("foreign");
    std::fs::write(
        scratch.file(),
        b"not a database, not at all, not even close",
    )
    .unwrap();
    assert!(matches!(
        SqliteStore::open(scratch.file()),
        Err(StoreError::Unavailable(_))
    ));

    let newer = scratch.0.join("newer.sqlite");
    drop(SqliteStore::open(&newer).unwrap());
    rusqlite::Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let error = SqliteStore::open(&newer).unwrap_err();
    assert!(error.to_string().contains("unavailable"), "{error}");
    assert!(format!("{error:?}").contains("newer"), "{error:?}");
}

#[tokio::test]
async fn a_store_reopened_keeps_its_records() {
    let scratch = Scratch::new("reopen");
    let store = SqliteStore::open(scratch.file()).unwrap();
    let lease = acquire(&store, &key("kept")).await;
    store.finish(&lease, recorded("exec_kept")).await.unwrap();
    drop(store);
    let store = SqliteStore::open(scratch.file()).unwrap();
    match store.claim(&key("kept"), fp(), WRITE).await {
        Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_kept")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_file_of_the_first_layout_gains_records_and_keeps_its_claims() {
    use carmy_core::records::{Changes, Committed, RecordKey, RecordStore};
    let scratch = Scratch::new("layout-1");
    let store = SqliteStore::open(scratch.file()).unwrap();
    let lease = acquire(&store, &key("before")).await;
    store.finish(&lease, recorded("exec_before")).await.unwrap();
    drop(store);
    // Back to what layout 1 wrote: claims only.
    let connection = rusqlite::Connection::open(scratch.file()).unwrap();
    connection
        .execute_batch(&format!(
            "DROP TABLE carmy_records; DROP TABLE carmy_collections; \
             DROP TABLE carmy_record_stamp; {TASKS_DROPPED} PRAGMA user_version = 1;"
        ))
        .unwrap();
    drop(connection);

    let store = SqliteStore::open(scratch.file()).unwrap();
    assert!(matches!(
        store.claim(&key("before"), fp(), WRITE).await,
        Ok(Claim::Finished(_))
    ));
    let changes = Changes {
        writes: vec![(
            RecordKey::new("orders", "ord-1"),
            Some(json!({ "total": 3 })),
        )],
        ..Changes::default()
    };
    assert_eq!(store.commit(&changes, None).await.unwrap(), Committed::Done);
    let read = store
        .read(&RecordKey::new("orders", "ord-1"))
        .await
        .unwrap();
    assert_eq!(read.value, Some(json!({ "total": 3 })));
    assert_eq!(rows(&scratch.file(), "PRAGMA user_version"), 3);
}

/// A record committed with an outcome by one process is there for another process that
/// opens the file, and a conflicting commit from the second applies nothing.
#[tokio::test]
async fn records_are_shared_by_every_connection_to_the_file() {
    use carmy_core::records::{Changes, Committed, RecordKey, RecordStore};
    let scratch = Scratch::new("records-shared");
    let first = SqliteStore::open(scratch.file()).unwrap();
    let second = SqliteStore::open(scratch.file()).unwrap();
    let stock = RecordKey::new("stock", "sku-1");
    let seen = second.read(&stock).await.unwrap();
    let lease = acquire(&first, &key("order-1")).await;
    let take = Changes {
        reads: vec![(stock.clone(), 0)],
        writes: vec![(stock.clone(), Some(json!(4)))],
        ..Changes::default()
    };
    let committed = first
        .commit(&take, Some((&lease, &recorded("exec_1"))))
        .await
        .unwrap();
    assert_eq!(committed, Committed::Done);
    let stale = Changes {
        reads: vec![(stock.clone(), seen.version)],
        writes: vec![(stock.clone(), Some(json!(4)))],
        ..Changes::default()
    };
    assert_eq!(
        second.commit(&stale, None).await.unwrap(),
        Committed::Conflict
    );
    assert_eq!(second.read(&stock).await.unwrap().value, Some(json!(4)));
    match second.claim(&key("order-1"), fp(), WRITE).await {
        Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_1")),
        other => panic!("{other:?}"),
    }
}

// --- Tasks ---------------------------------------------------------------------------------------

/// What takes a file back to before layout 3: no tasks (their indexes and triggers go with them).
const TASKS_DROPPED: &str = "DROP TABLE carmy_tasks; DROP TABLE carmy_task_stamp; \
                             DROP TABLE carmy_task_shares; DROP TABLE carmy_task_totals;";
