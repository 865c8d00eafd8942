//! What the file store promises beyond the shared contract: several processes (here, several
//! connections) on one file, retention, bounds kept exactly, failing closed, staying off the
//! executor.

use std::{
    path::Path,
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

use crate::scratch::Scratch;
use serde_json::json;
use tokio::time::{sleep, timeout};

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
        SqliteStoreOptions::default().with_request_ids(|ids| {
            ids.with_max_outcome_bytes(64 << 10)
                .with_max_bytes_per_principal(1 << 20)
        }),
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

    let newer = scratch.dir().join("newer.sqlite");
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

/// The file and the companions SQLite keeps beside it (`-wal`, `-shm`) are the owner's alone
/// (mode `0600`) whatever the umask: they hold every call's arguments and outcomes.
#[cfg(unix)]
#[tokio::test]
async fn the_file_and_its_companions_are_the_owner_s_alone() {
    use std::os::unix::fs::PermissionsExt;

    let scratch = Scratch::new("private");
    let store = SqliteStore::open(scratch.file()).unwrap();
    acquire(&store, &key("order-1")).await;
    for suffix in ["", "-wal", "-shm"] {
        let companion = scratch.dir().join(format!("store.sqlite{suffix}"));
        let mode = std::fs::metadata(&companion)
            .unwrap_or_else(|error| panic!("{}: {error}", companion.display()))
            .permissions()
            .mode();
        assert_eq!(
            format!("{:o}", mode & 0o777),
            "600",
            "{}",
            companion.display()
        );
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
    assert_eq!(rows(&scratch.file(), "PRAGMA user_version"), 4);
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

/// What takes a file back to before layout 3: no tasks (their indexes and triggers go with
/// them), nor what later layouts add.
const TASKS_DROPPED: &str = "DROP TABLE carmy_tasks; DROP TABLE carmy_task_stamp; \
                             DROP TABLE carmy_task_shares; DROP TABLE carmy_task_totals; \
                             DROP TABLE carmy_redeemed; DROP TABLE carmy_redeemers;";

/// Tasks in the file: shared by every connection to it, bounded, forgotten in time, kept by a
/// file of an older layout moved on; and runtimes on one file sharing them end to end.
mod tasks {
    use std::{collections::BTreeMap, sync::Arc, time::Duration};

    use carmy_core::{
        AgentError, Ask, AskKind, Asked, Asker, Asks, Carmy, Claim, Context, Effect, ErrorCategory,
        ExecutionId, ExecutionStatus, IdempotencyStore, Invocation, NewTask, NoInput, OutcomeKind,
        Recorded, Request, Runtime, StoreError, TaskEnding, TaskId, TaskKey, TaskProgress,
        TaskReport, TaskStatus, TaskStore, TaskSupport, Tool, ToolSpec, codes,
    };
    use carmy_store::{SqliteStore, SqliteStoreOptions};
    use serde_json::{Value, json};
    use tokio::time::{Instant, sleep, timeout};

    use super::{Scratch, TASKS_DROPPED, WRITE, acquire, fp, key, recorded, rows};

    const LONG: Duration = Duration::from_secs(60);
    /// How long another connection's write may take to reach a holder: a few polls.
    const NOTICE: Duration = Duration::from_secs(1);

    fn alices() -> TaskKey {
        TaskKey::new(Some("alice"), TaskId::generate())
    }

    fn new_task(key: &TaskKey, ttl: Duration) -> NewTask {
        NewTask::new(
            key.clone(),
            "work",
            ExecutionId::from("exec_1"),
            ttl,
            Duration::from_millis(500),
        )
    }

    fn ending(status: ExecutionStatus, result: Result<Value, AgentError>) -> TaskEnding {
        TaskEnding::new(Recorded::new(ExecutionId::from("exec_1"), status, result))
    }

    fn form() -> Ask {
        Ask::input("Sure?", json!({ "type": "object", "properties": {} }))
    }

    fn accept() -> Value {
        json!({ "action": "accept", "content": {} })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_holder_hears_of_what_another_connection_writes_and_of_nothing_else() {
        let scratch = Scratch::new("tasks-shared");
        let here = SqliteStore::open(scratch.file()).unwrap();
        let there = SqliteStore::open(scratch.file()).unwrap();
        let task = alices();
        let lease = here
            .create(new_task(&task, LONG), LONG)
            .await
            .unwrap()
            .lease;
        let report = TaskReport::new(
            Some(TaskProgress {
                done: 1.0,
                total: Some(2.0),
            }),
            Some("halfway".into()),
        );
        here.renew(&lease, LONG, Some(report)).await.unwrap();
        let seen = there.get(&task).await.unwrap().unwrap();
        assert_eq!(seen.status_message.as_deref(), Some("halfway"));

        // The other connection writing something else (claims) wakes nobody.
        let changed = here.changed(&lease);
        let unrelated = async {
            for n in 0..4 {
                acquire(&there, &key(&format!("unrelated-{n}"))).await;
                sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::select! {
            () = changed => panic!("the holder was woken by writes of nothing of its own"),
            () = unrelated => {}
        }

        // A question asked here and answered there: the holder waiting here wakes, and its
        // renewal reads the answer.
        here.ask(&lease, Asks::new().with("confirm.1", form()))
            .await
            .unwrap();
        let waiting = there.get(&task).await.unwrap().unwrap();
        assert_eq!(waiting.status, TaskStatus::InputRequired);
        let changed = here.changed(&lease);
        let started = Instant::now();
        let responded = there
            .respond(&task, BTreeMap::from([("confirm.1".to_owned(), accept())]))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(responded.accepted, ["confirm.1"]);
        timeout(NOTICE, changed)
            .await
            .expect("the holder never heard of the other connection's answer");
        eprintln!("an answer reached the holder in {:?}", started.elapsed());
        let signals = here.renew(&lease, LONG, None).await.unwrap();
        assert_eq!(signals.answers["confirm.1"], accept());
        assert!(!signals.cancel_requested);

        // A cancel there, the same way.
        let changed = here.changed(&lease);
        let cancelled = there.cancel(&task).await.unwrap().unwrap();
        assert!(cancelled.cancel_requested);
        timeout(NOTICE, changed)
            .await
            .expect("the holder never heard of the other connection's cancel");
        assert!(
            here.renew(&lease, LONG, None)
                .await
                .unwrap()
                .cancel_requested
        );
        let stopped = ending(
            ExecutionStatus::Cancelled,
            Err(AgentError::new(
                ErrorCategory::Cancelled,
                codes::CANCELLED,
                "cancelled",
            )),
        );
        TaskStore::finish(&here, &lease, stopped).await.unwrap();
        let ended = there.get(&task).await.unwrap().unwrap();
        assert_eq!(ended.status, TaskStatus::Cancelled);
        // The task ended: a wait on its lease is over at once.
        timeout(NOTICE, here.changed(&lease)).await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lease_settled_as_lost_by_another_connection_wakes_its_holder() {
        let scratch = Scratch::new("tasks-lost");
        let here = SqliteStore::open(scratch.file()).unwrap();
        let there = SqliteStore::open(scratch.file()).unwrap();
        let task = alices();
        let lease = here
            .create(new_task(&task, LONG), Duration::from_millis(200))
            .await
            .unwrap()
            .lease;
        let changed = here.changed(&lease);
        sleep(Duration::from_millis(300)).await;
        let lost = there.get(&task).await.unwrap().unwrap();
        assert_eq!(lost.status, TaskStatus::Failed);
        timeout(NOTICE, changed)
            .await
            .expect("the holder never heard its task was settled elsewhere");
        assert!(matches!(
            here.renew(&lease, LONG, None).await,
            Err(StoreError::LeaseLost)
        ));
        let outcome = here.get(&task).await.unwrap().unwrap().outcome.unwrap();
        assert_eq!(outcome.status, ExecutionStatus::Lost);
        assert_eq!(outcome.result.unwrap_err().code(), codes::EXECUTION_LOST);
    }

    #[tokio::test]
    async fn a_file_of_the_second_layout_gains_tasks_and_keeps_its_claims_and_records() {
        use carmy_core::records::{Changes, Committed, RecordKey, RecordStore};
        let scratch = Scratch::new("layout-2");
        let store = SqliteStore::open(scratch.file()).unwrap();
        let lease = acquire(&store, &key("before")).await;
        let changes = Changes {
            writes: vec![(RecordKey::new("orders", "ord-1"), Some(json!({ "n": 1 })))],
            ..Changes::default()
        };
        let committed = store
            .commit(&changes, Some((&lease, &recorded("exec_before"))))
            .await
            .unwrap();
        assert_eq!(committed, Committed::Done);
        drop(store);
        // Back to what layout 2 wrote: claims and records, no tasks.
        rusqlite::Connection::open(scratch.file())
            .unwrap()
            .execute_batch(&format!("{TASKS_DROPPED} PRAGMA user_version = 2;"))
            .unwrap();

        let store = SqliteStore::open(scratch.file()).unwrap();
        assert_eq!(rows(&scratch.file(), "PRAGMA user_version"), 4);
        match store.claim(&key("before"), fp(), WRITE).await {
            Ok(Claim::Finished(outcome)) => assert_eq!(outcome, recorded("exec_before")),
            other => panic!("{other:?}"),
        }
        let order = store
            .read(&RecordKey::new("orders", "ord-1"))
            .await
            .unwrap();
        assert_eq!(order.value, Some(json!({ "n": 1 })));
        let task = alices();
        let lease = store
            .create(new_task(&task, LONG), LONG)
            .await
            .unwrap()
            .lease;
        TaskStore::finish(
            &store,
            &lease,
            ending(ExecutionStatus::Succeeded, Ok(json!(1))),
        )
        .await
        .unwrap();
        assert_eq!(
            store.get(&task).await.unwrap().unwrap().status,
            TaskStatus::Completed
        );
    }

    /// Whether the tasks' shares and totals are what their rows add up to.
    fn counted(path: &std::path::Path) -> bool {
        rows(
            path,
            "SELECT count(*) FROM (SELECT principal, count(*) AS n, sum(bytes) AS b \
             FROM carmy_tasks GROUP BY principal) AS actual \
             FULL JOIN carmy_task_shares USING (principal) \
             WHERE actual.n IS NOT carmy_task_shares.tasks OR actual.b IS NOT carmy_task_shares.bytes",
        ) == 0
            && rows(
                path,
                "SELECT (SELECT count(*) FROM carmy_tasks) = tasks \
                 AND (SELECT total(bytes) FROM carmy_tasks) = bytes FROM carmy_task_totals",
            ) == 1
    }

    #[tokio::test]
    async fn task_bounds_are_kept_exactly_and_a_large_outcome_is_a_note() {
        let scratch = Scratch::new("tasks-bounds");
        let options = SqliteStoreOptions::default().with_tasks(|tasks| {
            tasks
                .with_max_outcome_bytes(4 << 10)
                .with_max_bytes_per_principal(64 << 10)
                .with_max(7)
        });
        let store = SqliteStore::open_with(scratch.file(), options).unwrap();
        // Long enough that no task expires before the bounds are checked, however slow the disk.
        let ttl = Duration::from_secs(1);
        let mut last_ended = Instant::now();
        let big = ending(
            ExecutionStatus::Succeeded,
            Ok(json!({ "report": "x".repeat(8 << 10) })),
        );
        let mut keys = Vec::new();
        for principal in ["alice", "bob", ""] {
            for n in 0..2 {
                let task = TaskKey::new(Some(principal), format!("task_{n}").as_str());
                let lease = store
                    .create(new_task(&task, ttl), LONG)
                    .await
                    .unwrap()
                    .lease;
                if n == 0 {
                    TaskStore::finish(&store, &lease, big.clone())
                        .await
                        .unwrap();
                    last_ended = Instant::now();
                } else {
                    store
                        .ask(&lease, Asks::new().with("confirm.1", form()))
                        .await
                        .unwrap();
                }
                keys.push(task);
            }
        }
        assert!(counted(&scratch.file()));
        let note = store.get(&keys[0]).await.unwrap().unwrap();
        assert_eq!(note.status, TaskStatus::Completed);
        let error = note.outcome.unwrap().result.unwrap_err();
        assert_eq!(error.code(), codes::OUTCOME_NOT_KEPT);
        assert!(rows(&scratch.file(), "SELECT max(bytes) FROM carmy_tasks") < 2 << 10);

        // Answers past the principal's bytes are refused whole; so are questions.
        let huge = json!({ "action": "accept", "content": { "text": "y".repeat(64 << 10) } });
        match store
            .respond(&keys[1], BTreeMap::from([("confirm.1".to_owned(), huge)]))
            .await
        {
            Err(StoreError::Full(_)) => {}
            other => panic!("answers past the share must fail closed: {other:?}"),
        }
        assert_eq!(
            store
                .get(&keys[1])
                .await
                .unwrap()
                .unwrap()
                .pending()
                .count(),
            1
        );
        // One more task fits in the total, then none, until the ended ones expire.
        let seventh = store.create(new_task(&alices(), ttl), LONG).await.unwrap();
        assert!(matches!(
            store.create(new_task(&alices(), ttl), LONG).await,
            Err(StoreError::Full(_))
        ));
        assert!(counted(&scratch.file()));
        tokio::time::sleep_until(last_ended + ttl + Duration::from_millis(100)).await;
        assert_eq!(TaskStore::sweep(&store).await.unwrap(), 3);
        assert!(counted(&scratch.file()));
        assert!(
            store
                .get(&seventh.lease.key().clone())
                .await
                .unwrap()
                .is_some()
        );
        store.create(new_task(&alices(), ttl), LONG).await.unwrap();
    }

    #[tokio::test]
    async fn tasks_are_settled_and_forgotten_by_the_background_sweep() {
        let scratch = Scratch::new("tasks-swept");
        let options = SqliteStoreOptions::default().with_sweep_interval(Duration::from_millis(50));
        let store = SqliteStore::open_with(scratch.file(), options).unwrap();
        let ttl = Duration::from_millis(400);
        for n in 0..3 {
            let lease = store
                .create(new_task(&alices(), ttl), LONG)
                .await
                .unwrap()
                .lease;
            TaskStore::finish(
                &store,
                &lease,
                ending(ExecutionStatus::Succeeded, Ok(json!(n))),
            )
            .await
            .unwrap();
        }
        // A lease that runs out, and nobody ever looks.
        store
            .create(new_task(&alices(), ttl), Duration::from_millis(100))
            .await
            .unwrap();
        assert_eq!(rows(&scratch.file(), "SELECT count(*) FROM carmy_tasks"), 4);
        sleep(Duration::from_millis(900)).await;
        assert_eq!(rows(&scratch.file(), "SELECT count(*) FROM carmy_tasks"), 0);
        assert_eq!(
            rows(&scratch.file(), "SELECT count(*) FROM carmy_task_shares"),
            0
        );
        assert_eq!(
            rows(
                &scratch.file(),
                "SELECT tasks + bytes FROM carmy_task_totals"
            ),
            0
        );
    }

    // --- Through the runtime ---------------------------------------------------------------

    /// Works until cancelled (or a minute).
    struct Work;

    impl Tool for Work {
        type Input = NoInput;
        type Output = Value;
        const SPEC: ToolSpec = ToolSpec::new("work", Effect::Write)
            .task(TaskSupport::Required)
            .timeout(Duration::from_secs(60));

        async fn run(&self, _: NoInput, invocation: Invocation) -> Result<Value, AgentError> {
            invocation
                .context()
                .progress(1.0, Some(2.0), Some("working"));
            sleep(Duration::from_secs(60)).await;
            Ok(json!("worked a minute"))
        }
    }

    /// Asks for a confirmation, then says what it was told.
    struct Confirm;

    impl Tool for Confirm {
        type Input = NoInput;
        type Output = Value;
        const SPEC: ToolSpec = ToolSpec::new("confirm", Effect::Write).task(TaskSupport::Optional);

        async fn run(&self, _: NoInput, invocation: Invocation) -> Result<Value, AgentError> {
            let answers = invocation
                .context()
                .ask(Asks::new().with("confirm", form()))
                .await?;
            Ok(json!({ "confirm": answers.input("confirm")?.action.as_str() }))
        }
    }

    /// A client that can answer any question (in a task, the answers come through the store).
    struct AnyClient;

    impl Asker for AnyClient {
        fn can_ask(&self, _: AskKind) -> bool {
            true
        }

        async fn ask(&self, _: &Asks) -> Asked {
            Asked::Refused(AgentError::internal("a task's questions go to its store"))
        }
    }

    /// A runtime with a connection of its own to `file`, keeping both its executions and its
    /// tasks there, with the default task lease (30 s): only `changed` tells its holders soon.
    fn runtime_on(file: &std::path::Path) -> Runtime {
        let store = Arc::new(SqliteStore::open(file).unwrap());
        Carmy::new()
            .tool(Work)
            .tool(Confirm)
            .store(Arc::clone(&store))
            .task_store(store)
            .build()
            .unwrap()
    }

    async fn start(runtime: &Runtime, tool: &str) -> TaskKey {
        let request = Request::new(tool, json!({}))
            .allow_task()
            .asker(AnyClient)
            .context(Context::new().with_principal("alice"));
        let outcome = timeout(NOTICE, runtime.execute(request)).await.unwrap();
        match outcome.kind {
            OutcomeKind::Task(task) => task.key,
            other => panic!("expected a task, got {other:?}: {:?}", outcome.result),
        }
    }

    /// Reads the task on `runtime` until `done` holds (for a few seconds at most).
    async fn until(
        runtime: &Runtime,
        key: &TaskKey,
        done: impl Fn(&carmy_core::TaskRecord) -> bool,
    ) -> carmy_core::TaskRecord {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let record = runtime.task(key).await.expect("the task is found");
            if done(&record) {
                return record;
            }
            assert!(Instant::now() < deadline, "the task stayed {record:?}");
            sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runtimes_on_one_file_read_answer_and_cancel_each_others_tasks() {
        let scratch = Scratch::new("tasks-runtimes");
        let (a, b) = (runtime_on(&scratch.file()), runtime_on(&scratch.file()));

        let working = start(&a, "work").await;
        let seen = until(&b, &working, |record| record.progress.is_some()).await;
        assert_eq!(seen.status, TaskStatus::Working);
        assert_eq!(seen.status_message.as_deref(), Some("working"));
        let started = Instant::now();
        b.cancel_task(&working).await.unwrap();
        let cancelled = until(&b, &working, |record| record.status.is_terminal()).await;
        eprintln!(
            "a cancel reached the other runtime's tool in {:?}",
            started.elapsed()
        );
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        assert_eq!(
            cancelled.outcome.unwrap().status,
            ExecutionStatus::Cancelled
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "long before a renewal"
        );
        assert_eq!(
            a.task(&working).await.unwrap().status,
            TaskStatus::Cancelled
        );

        let asking = start(&a, "confirm").await;
        let waiting = until(&b, &asking, |record| record.pending().count() == 1).await;
        assert_eq!(waiting.status, TaskStatus::InputRequired);
        let question = waiting.pending().next().unwrap().0.to_owned();
        let responded = b
            .answer_task(&asking, BTreeMap::from([(question.clone(), accept())]))
            .await
            .unwrap();
        assert_eq!(responded.accepted, [question]);
        let done = until(&a, &asking, |record| record.status.is_terminal()).await;
        assert_eq!(done.status, TaskStatus::Completed);
        assert_eq!(
            done.outcome.unwrap().result.unwrap(),
            json!({ "confirm": "accept" })
        );
        // Its owner's only: another principal with the id finds nothing, on either runtime.
        let mallory = TaskKey::new(Some("mallory"), asking.id().clone());
        for runtime in [&a, &b] {
            assert_eq!(
                runtime.task(&mallory).await.unwrap_err().code(),
                codes::TASK_NOT_FOUND
            );
        }
    }
}
