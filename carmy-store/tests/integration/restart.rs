//! A real process claims keys (or runs tasks) in the file and is killed with SIGKILL; this
//! process opens the file again and checks what the contract says survives.
//!
//! The child is this test binary run again with `CARMY_STORE_CHILD` set: its `child` test then
//! plays the part that variable names, saying on stdout how far it got.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use carmy_core::{
    AgentError, Carmy, Claim, Context, Effect, ExecutionId, ExecutionStatus, Fingerprint,
    IdempotencyKey, IdempotencyStore, Invocation, LeaseTerms, Limits, NewTask, NoInput,
    OutcomeKind, Recorded, Release, Request, TaskEnding, TaskKey, TaskStatus, TaskSupport, Tool,
    ToolSpec, codes,
};
use carmy_store::SqliteStore;

use crate::scratch::Scratch;
use serde_json::json;
use tokio::time::{Instant, timeout};

const MODE: &str = "CARMY_STORE_CHILD";
const FILE: &str = "CARMY_STORE_CHILD_FILE";
/// What starts each line the child says.
const SAID: &str = "carmy-child: ";
/// The lease of the claims a killed child leaves behind: short, so the test waits it out.
const LEASE: Duration = Duration::from_millis(1500);

fn key(id: &str) -> IdempotencyKey {
    IdempotencyKey::new(Some("alice"), id)
}

fn fp() -> Fingerprint {
    Fingerprint::of("place_order", &json!({ "sku": "MOUSE-1", "quantity": 2 }))
}

fn terms(if_lost: Release, duration: Duration) -> LeaseTerms {
    LeaseTerms { duration, if_lost }
}

/// What the runtime asks for a transactional write: its effects commit with its outcome, so
/// a lost lease frees the key.
fn commit_terms() -> LeaseTerms {
    terms(Release::Retry, LEASE)
}

/// Order `n` as a transactional tool would write it: the order, and the stock counter.
fn order_of(n: u64) -> carmy_core::records::Changes {
    use carmy_core::records::{Changes, RecordKey};
    Changes {
        writes: vec![
            (
                RecordKey::new("orders", &format!("ord-{n}")),
                Some(json!({ "n": n })),
            ),
            (RecordKey::new("stock", "sku-1"), Some(json!(n))),
        ],
        ..Changes::default()
    }
}

fn write_terms() -> LeaseTerms {
    terms(Release::Uncertain(ExecutionStatus::Lost), LEASE)
}

fn recorded(id: &str) -> Recorded {
    Recorded::new(
        ExecutionId::from(id),
        ExecutionStatus::Succeeded,
        Ok(json!({ "order": "ord_1", "total": 59.8 })),
    )
}

/// The task the `task-finish` child finishes.
fn finished_task() -> TaskKey {
    TaskKey::new(Some("alice"), "task_finished_before_the_kill")
}

/// Works for a minute, reporting progress first: the task a killed child leaves running.
struct Work;

impl Tool for Work {
    type Input = NoInput;
    type Output = serde_json::Value;
    const SPEC: ToolSpec = ToolSpec::new("work", Effect::Write)
        .task(TaskSupport::Required)
        .timeout(Duration::from_secs(60));

    async fn run(
        &self,
        _: NoInput,
        invocation: Invocation,
    ) -> Result<serde_json::Value, AgentError> {
        invocation
            .context()
            .progress(1.0, Some(2.0), Some("working"));
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(json!("worked a minute"))
    }
}

/// The child's part; a no-op when this binary runs as the test suite.
#[test]
fn child() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let file = PathBuf::from(std::env::var(FILE).unwrap());
    let store = SqliteStore::open(&file).unwrap();
    let say = |line: &str| {
        let mut out = std::io::stdout().lock();
        // On a line of its own: libtest may have written `test child ... ` without a newline.
        writeln!(out, "\n{SAID}{line}").unwrap();
        out.flush().unwrap();
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let acquire = |id: &'static str, terms: LeaseTerms| {
                let store = &store;
                async move {
                    match store.claim(&key(id), fp(), terms).await.unwrap() {
                        Claim::Acquired(lease) => lease,
                        other => panic!("the child could not claim {id}: {other:?}"),
                    }
                }
            };
            match mode.as_str() {
                "finish" => {
                    let lease = acquire("paid", write_terms()).await;
                    store.finish(&lease, recorded("exec_child")).await.unwrap();
                    say("finished");
                }
                "hold-write" => {
                    acquire("write", write_terms()).await;
                    say("claimed");
                }
                "hold-read" => {
                    acquire("read", terms(Release::Retry, LEASE)).await;
                    say("claimed");
                }
                "finish-when-told" => {
                    let long = terms(
                        Release::Uncertain(ExecutionStatus::Lost),
                        Duration::from_secs(60),
                    );
                    let lease = acquire("told", long).await;
                    say("claimed");
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).unwrap();
                    store.finish(&lease, recorded("exec_told")).await.unwrap();
                    say("finished");
                }
                "churn" => {
                    for n in 0.. {
                        let id = format!("churn-{n}");
                        let lease = match store.claim(&key(&id), fp(), write_terms()).await {
                            Ok(Claim::Acquired(lease)) => lease,
                            other => panic!("the child could not claim {id}: {other:?}"),
                        };
                        store
                            .finish(&lease, recorded(&format!("exec_{n}")))
                            .await
                            .unwrap();
                        say(&format!("finished {n}"));
                    }
                }
                "commit-churn" => {
                    // Each key claimed for a transactional write (a lost lease frees it), then
                    // its record and its outcome committed together.
                    use carmy_core::records::RecordStore;
                    for n in 0.. {
                        let id = format!("commit-{n}");
                        let lease = match store.claim(&key(&id), fp(), commit_terms()).await {
                            Ok(Claim::Acquired(lease)) => lease,
                            other => panic!("the child could not claim {id}: {other:?}"),
                        };
                        let committed = store
                            .commit(
                                &order_of(n),
                                Some((&lease, &recorded(&format!("exec_{n}")))),
                            )
                            .await
                            .unwrap();
                        assert_eq!(committed, carmy_core::records::Committed::Done);
                        say(&format!("committed {n}"));
                    }
                }
                "group-churn" => {
                    // Many writers at once, so the store's thread finds their claims and
                    // commits waiting together and commits them in groups.
                    use carmy_core::records::{Changes, Committed, RecordKey, RecordStore};
                    let shared = std::sync::Arc::new(SqliteStore::open(&file).unwrap());
                    let writer = |w: u64| {
                        let store = std::sync::Arc::clone(&shared);
                        async move {
                            for n in 0.. {
                                let id = format!("group-{w}-{n}");
                                let lease = match store.claim(&key(&id), fp(), commit_terms()).await
                                {
                                    Ok(Claim::Acquired(lease)) => lease,
                                    other => panic!("the child could not claim {id}: {other:?}"),
                                };
                                let order = Changes {
                                    writes: vec![(
                                        RecordKey::new("orders", &id),
                                        Some(json!({ "w": w, "n": n })),
                                    )],
                                    ..Changes::default()
                                };
                                let recorded = recorded(&format!("exec_{w}_{n}"));
                                let committed =
                                    store.commit(&order, Some((&lease, &recorded))).await;
                                assert_eq!(committed.unwrap(), Committed::Done);
                                say(&format!("committed {id}"));
                            }
                        }
                    };
                    let mut writers = tokio::task::JoinSet::new();
                    for w in 0..GROUP_WRITERS {
                        writers.spawn(writer(w));
                    }
                    writers.join_next().await.unwrap().unwrap();
                }
                "task-finish" => {
                    // In this arm only: its `finish` is not the claims'.
                    use carmy_core::TaskStore;
                    let task = NewTask::new(
                        finished_task(),
                        "work",
                        ExecutionId::from("exec_task"),
                        Duration::from_secs(600),
                        Duration::from_millis(500),
                    );
                    let created = store.create(task, Duration::from_secs(60)).await.unwrap();
                    let ending = TaskEnding::new(recorded("exec_task"));
                    TaskStore::finish(&store, &created.lease, ending)
                        .await
                        .unwrap();
                    say("finished");
                }
                "task-run" | "task-run-long" => {
                    // A runtime on the file, running a task it renews every third of its lease:
                    // LEASE, or the default 30 s (a cancel then comes through `changed`).
                    let lease = if mode == "task-run" {
                        LEASE
                    } else {
                        Limits::default().task_lease
                    };
                    let shared = std::sync::Arc::new(SqliteStore::open(&file).unwrap());
                    let runtime = Carmy::new()
                        .tool(Work)
                        .store(std::sync::Arc::clone(&shared))
                        .task_store(shared)
                        .limits(Limits::default().with_task_lease(lease))
                        .build()
                        .unwrap();
                    let request = Request::new("work", json!({}))
                        .allow_task()
                        .context(Context::new().with_principal("alice"));
                    let outcome = runtime.execute(request).await;
                    let OutcomeKind::Task(task) = outcome.kind else {
                        panic!(
                            "the child's call did not become a task: {:?}",
                            outcome.result
                        );
                    };
                    say(&format!("task {}", task.key.id()));
                    // Keep the runtime (and its task's driver) alive until the kill.
                    std::future::pending::<()>().await;
                }
                other => panic!("unknown child mode {other}"),
            }
            // Wait to be killed: nothing after this point may matter.
            std::future::pending::<()>().await;
        });
}

/// A child process playing a part; killed with SIGKILL when dropped, if the test fails first.
struct Played {
    child: Child,
    /// What it says, line by line (read on a thread of its own, so nothing blocks on it).
    said: mpsc::Receiver<String>,
}

/// A child playing `mode` on `file`.
fn spawn(mode: &str, file: &Path) -> Played {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "restart::child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE, mode)
        .env(FILE, file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tell, said) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Some(said) = line.trim().strip_prefix(SAID)
                && tell.send(said.to_owned()).is_err()
            {
                return;
            }
        }
    });
    Played { child, said }
}

impl Played {
    /// Waits until the child says `said`.
    fn expect(&self, said: &str) {
        loop {
            match self.said.recv_timeout(Duration::from_secs(20)) {
                Ok(line) if line == said => return,
                Ok(_) => {}
                Err(error) => panic!("the child did not say {said:?}: {error}"),
            }
        }
    }

    /// Waits until the child says something starting with `prefix`; the rest of what it said.
    fn expect_after(&self, prefix: &str) -> String {
        loop {
            match self.said.recv_timeout(Duration::from_secs(20)) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.to_owned();
                    }
                }
                Err(error) => panic!("the child did not say {prefix:?}...: {error}"),
            }
        }
    }

    /// SIGKILL: no destructor, no flush, no goodbye. Returns what the child said and was not
    /// read yet.
    fn kill_9(mut self) -> Vec<String> {
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(9), "{status:?}");
        }
        #[cfg(not(unix))]
        let _ = status;
        self.said.iter().collect()
    }
}

impl Drop for Played {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn reopen(file: &Path) -> SqliteStore {
    let file = file.to_path_buf();
    tokio::task::spawn_blocking(move || SqliteStore::open(file).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_finished_write_is_replayed_after_kill_9_with_its_execution_id() {
    let scratch = Scratch::new("finished");
    let child = spawn("finish", &scratch.file());
    child.expect("finished");
    child.kill_9();
    let store = reopen(&scratch.file()).await;
    for _ in 0..2 {
        match store
            .claim(&key("paid"), fp(), write_terms())
            .await
            .unwrap()
        {
            Claim::Finished(outcome) => {
                assert_eq!(outcome, recorded("exec_child"));
                assert_eq!(outcome.execution_id.as_str(), "exec_child");
            }
            other => panic!("a finished write must be replayed after a restart: {other:?}"),
        }
    }
}

/// Waits for a dead process's claim of `key` to run out, as a retry would, and returns the
/// claim that follows.
async fn retry_after_the_lease(
    store: &SqliteStore,
    key: &IdempotencyKey,
    terms: LeaseTerms,
) -> Claim {
    let started = Instant::now();
    let Claim::Running(waiter) = store.claim(key, fp(), terms).await.unwrap() else {
        panic!("the dead process's claim still holds until its lease runs out");
    };
    timeout(LEASE + Duration::from_secs(2), waiter)
        .await
        .expect("the waiter outlived the dead process's lease");
    let waited = started.elapsed();
    assert!(waited < LEASE + Duration::from_secs(1), "waited {waited:?}");
    store.claim(key, fp(), terms).await.unwrap()
}

#[tokio::test]
async fn a_write_killed_mid_claim_is_uncertain_once_its_lease_runs_out() {
    let scratch = Scratch::new("write");
    let child = spawn("hold-write", &scratch.file());
    child.expect("claimed");
    child.kill_9();
    let store = reopen(&scratch.file()).await;
    match retry_after_the_lease(&store, &key("write"), write_terms()).await {
        Claim::Uncertain(ExecutionStatus::Lost) => {}
        other => panic!("an interrupted write may have committed: {other:?}"),
    }
    // Still uncertain for the next retry, in a process opened after that.
    drop(store);
    let store = reopen(&scratch.file()).await;
    assert!(matches!(
        store
            .claim(&key("write"), fp(), write_terms())
            .await
            .unwrap(),
        Claim::Uncertain(ExecutionStatus::Lost)
    ));
}

#[tokio::test]
async fn a_read_killed_mid_claim_runs_again_once_its_lease_runs_out() {
    let scratch = Scratch::new("read");
    let child = spawn("hold-read", &scratch.file());
    child.expect("claimed");
    child.kill_9();
    let store = reopen(&scratch.file()).await;
    let read = terms(Release::Retry, Duration::from_secs(60));
    let Claim::Acquired(lease) = retry_after_the_lease(&store, &key("read"), read).await else {
        panic!("a read whose holder died runs again");
    };
    store.finish(&lease, recorded("exec_again")).await.unwrap();
}

#[tokio::test]
async fn a_waiter_sees_another_process_finish() {
    let scratch = Scratch::new("told");
    let mut child = spawn("finish-when-told", &scratch.file());
    child.expect("claimed");
    let store = reopen(&scratch.file()).await;
    let Claim::Running(waiter) = store
        .claim(&key("told"), fp(), write_terms())
        .await
        .unwrap()
    else {
        panic!("the other process's claim must be seen running");
    };
    writeln!(child.child.stdin.as_mut().unwrap(), "go").unwrap();
    child.expect("finished");
    // The lease is 60 s: only polling the file notices the other process's finish in time.
    timeout(Duration::from_secs(3), waiter)
        .await
        .expect("the waiter never noticed the other process's finish");
    match store
        .claim(&key("told"), fp(), write_terms())
        .await
        .unwrap()
    {
        Claim::Finished(outcome) => assert_eq!(outcome, recorded("exec_told")),
        other => panic!("{other:?}"),
    }
    child.kill_9();
}

#[tokio::test]
async fn kill_9_at_any_point_loses_no_finished_record_and_leaves_no_endless_claim() {
    let mut total = 0;
    for (round, after) in [5u64, 40, 120, 250].into_iter().enumerate() {
        let scratch = Scratch::new(&format!("churn-{round}"));
        let child = spawn("churn", &scratch.file());
        tokio::time::sleep(Duration::from_millis(after)).await;
        // Every line said before the kill is still in the pipe, read to its end.
        let finished: Vec<u64> = child
            .kill_9()
            .iter()
            .filter_map(|line| line.strip_prefix("finished ")?.parse().ok())
            .collect();
        eprintln!(
            "round {round}: killed after {after} ms, {} keys finished",
            finished.len()
        );

        let store = reopen(&scratch.file()).await;
        let integrity: String = rusqlite::Connection::open(scratch.file())
            .unwrap()
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(integrity, "ok");
        for &n in &finished {
            match store
                .claim(&key(&format!("churn-{n}")), fp(), write_terms())
                .await
                .unwrap()
            {
                Claim::Finished(outcome) => {
                    assert_eq!(outcome, recorded(&format!("exec_{n}")));
                }
                other => panic!("round {round}: finished key {n} was lost: {other:?}"),
            }
        }
        // The key in flight at the kill: finished (committed, not yet said), or a claim that
        // runs out with its lease and is then uncertain, or never claimed.
        let next = finished.last().map_or(0, |n| n + 1);
        let in_flight = key(&format!("churn-{next}"));
        match store.claim(&in_flight, fp(), write_terms()).await.unwrap() {
            Claim::Finished(outcome) => assert_eq!(outcome, recorded(&format!("exec_{next}"))),
            Claim::Running(_) => {
                match retry_after_the_lease(&store, &in_flight, write_terms()).await {
                    Claim::Uncertain(ExecutionStatus::Lost) => {}
                    other => panic!("round {round}: {other:?}"),
                }
            }
            Claim::Acquired(_) => {}
            other => panic!("round {round}: {other:?}"),
        }
        // Every claim left in the file has a finite lease, already run out or about to.
        let endless: i64 = rusqlite::Connection::open(scratch.file())
            .unwrap()
            .query_row(
                "SELECT count(*) FROM carmy_claims WHERE state = 0 AND expires_at > ?1",
                [i64::try_from(
                    (std::time::SystemTime::now() + Duration::from_secs(120))
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .as_millis(),
                )
                .unwrap()],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(endless, 0, "round {round}");
        total += finished.len();
    }
    assert!(
        total > 0,
        "the child never finished a key before it was killed"
    );
}

#[tokio::test]
async fn kill_9_mid_commit_leaves_records_and_outcomes_together_or_neither() {
    use carmy_core::records::{RecordKey, RecordStore};
    let mut total = 0;
    for (round, after) in [5u64, 60, 200].into_iter().enumerate() {
        let scratch = Scratch::new(&format!("commit-{round}"));
        let child = spawn("commit-churn", &scratch.file());
        tokio::time::sleep(Duration::from_millis(after)).await;
        let committed: Vec<u64> = child
            .kill_9()
            .iter()
            .filter_map(|line| line.strip_prefix("committed ")?.parse().ok())
            .collect();
        let store = reopen(&scratch.file()).await;
        let orders = store.list("orders").await.unwrap().records;
        // Every committed outcome has its order, and the last commit said or not yet said is
        // the only one that may be there beyond them: never an order without its outcome.
        let next = committed.last().map_or(0, |n| n + 1);
        for &n in &committed {
            assert!(
                matches!(
                    store
                        .claim(&key(&format!("commit-{n}")), fp(), commit_terms())
                        .await
                        .unwrap(),
                    Claim::Finished(_)
                ),
                "round {round}: outcome {n} lost"
            );
        }
        let in_flight = match store
            .claim(&key(&format!("commit-{next}")), fp(), commit_terms())
            .await
            .unwrap()
        {
            Claim::Finished(_) => true,
            // Claimed but not committed: its lease frees it, with nothing written.
            Claim::Running(_) | Claim::Acquired(_) => false,
            other => panic!("round {round}: {other:?}"),
        };
        let expected = committed.len() + usize::from(in_flight);
        assert_eq!(
            orders.len(),
            expected,
            "round {round}: orders without outcomes"
        );
        let stock = store.read(&RecordKey::new("stock", "sku-1")).await.unwrap();
        if expected > 0 {
            assert_eq!(stock.value, Some(json!(expected - 1)), "round {round}");
        }
        total += committed.len();
    }
    assert!(total > 0, "the child never committed before it was killed");
}

/// How many writers the `group-churn` child runs at once.
const GROUP_WRITERS: u64 = 32;

#[tokio::test]
async fn kill_9_mid_group_commit_loses_no_answered_call_and_splits_no_call() {
    use carmy_core::records::RecordStore;
    let mut total = 0;
    for (round, after) in [20u64, 150, 400].into_iter().enumerate() {
        let scratch = Scratch::new(&format!("group-{round}"));
        let child = spawn("group-churn", &scratch.file());
        tokio::time::sleep(Duration::from_millis(after)).await;
        let committed: Vec<String> = child
            .kill_9()
            .iter()
            .filter_map(|line| Some(line.strip_prefix("committed ")?.to_owned()))
            .collect();
        eprintln!(
            "round {round}: killed after {after} ms, {} calls answered",
            committed.len()
        );
        let store = reopen(&scratch.file()).await;
        let orders = store.list("orders").await.unwrap().records;
        let written: std::collections::HashSet<&str> =
            orders.iter().map(|(id, _)| id.as_str()).collect();
        // Every call answered before the kill is on disk, its record and its outcome.
        for id in &committed {
            assert!(
                written.contains(id.as_str()),
                "round {round}: {id}'s order lost"
            );
        }
        // And every order on disk has its outcome: calls committed whole or not at all, the
        // group's commit having been cut or not (answered or not yet).
        for id in &written {
            let w_n = id.strip_prefix("group-").unwrap().replace('-', "_");
            match store.claim(&key(id), fp(), commit_terms()).await.unwrap() {
                Claim::Finished(outcome) => {
                    assert_eq!(outcome, recorded(&format!("exec_{w_n}")), "round {round}");
                }
                other => panic!("round {round}: {id} was written without its outcome: {other:?}"),
            }
        }
        // At most one call per writer was in flight at the kill.
        assert!(
            written.len() <= committed.len() + usize::try_from(GROUP_WRITERS).unwrap(),
            "round {round}"
        );
        total += committed.len();
    }
    assert!(total > 0, "the child never committed before it was killed");
}

#[tokio::test]
async fn a_task_finished_before_kill_9_is_read_back_after_reopening() {
    use carmy_core::TaskStore;
    let scratch = Scratch::new("task-finished");
    let child = spawn("task-finish", &scratch.file());
    child.expect("finished");
    child.kill_9();
    for _ in 0..2 {
        let store = reopen(&scratch.file()).await;
        let record = store.get(&finished_task()).await.unwrap().unwrap();
        assert_eq!(record.status, TaskStatus::Completed);
        assert_eq!(record.outcome, Some(recorded("exec_task")));
        assert_eq!(record.execution_id.as_str(), "exec_task");
        // Another principal holding the id still finds nothing.
        let mallory = TaskKey::new(Some("mallory"), finished_task().id().clone());
        assert!(store.get(&mallory).await.unwrap().is_none());
    }
}

#[tokio::test]
async fn a_task_whose_process_was_killed_mid_run_fails_once_its_lease_runs_out() {
    use carmy_core::TaskStore;
    let scratch = Scratch::new("task-run");
    let child = spawn("task-run", &scratch.file());
    let id = child.expect_after("task ");
    // A renewal or so, then the kill.
    tokio::time::sleep(LEASE / 2).await;
    child.kill_9();
    let killed = Instant::now();
    let store = reopen(&scratch.file()).await;
    let task = TaskKey::new(Some("alice"), id.as_str());
    let running = store.get(&task).await.unwrap().unwrap();
    assert_eq!(running.status, TaskStatus::Working, "its lease still runs");
    assert_eq!(running.status_message.as_deref(), Some("working"));
    let failed = loop {
        let record = store.get(&task).await.unwrap().unwrap();
        if record.status.is_terminal() {
            break record;
        }
        assert!(
            killed.elapsed() < LEASE + Duration::from_secs(2),
            "the task outlived its lease: {record:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(failed.status, TaskStatus::Failed);
    let outcome = failed.outcome.unwrap();
    assert_eq!(outcome.status, ExecutionStatus::Lost);
    assert_eq!(outcome.result.unwrap_err().code(), codes::EXECUTION_LOST);
    // Settled in the file: a store opened after that reads it failed too.
    drop(store);
    let store = reopen(&scratch.file()).await;
    assert_eq!(
        store.get(&task).await.unwrap().unwrap().status,
        TaskStatus::Failed
    );
}

#[tokio::test]
async fn a_cancel_from_another_process_stops_the_task_long_before_a_renewal() {
    use carmy_core::TaskStore;
    let scratch = Scratch::new("task-cancel");
    let child = spawn("task-run-long", &scratch.file());
    let id = child.expect_after("task ");
    let store = reopen(&scratch.file()).await;
    let task = TaskKey::new(Some("alice"), id.as_str());
    let cancelled = Instant::now();
    assert!(store.cancel(&task).await.unwrap().unwrap().cancel_requested);
    // The child's holder renews every 10 s: only its poll of the file hears of the cancel soon.
    let ended = loop {
        let record = store.get(&task).await.unwrap().unwrap();
        if record.status.is_terminal() {
            break record;
        }
        assert!(
            cancelled.elapsed() < Duration::from_secs(3),
            "the other process's tool was not stopped: {record:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!("stopped {:?} after the cancel", cancelled.elapsed());
    assert_eq!(ended.status, TaskStatus::Cancelled);
    assert_eq!(ended.outcome.unwrap().status, ExecutionStatus::Cancelled);
    child.kill_9();
}
