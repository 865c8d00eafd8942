//! The one thread that talks to the file.
//!
//! SQLite calls block (on the disk, and on another process's write lock for up to the busy
//! timeout), so none may run on the async executor's threads. One dedicated thread owns the
//! connection and runs the store's jobs in the order they arrive: SQLite serializes writers
//! anyway, so a pool of connections would only wait on one another, and a single owner makes
//! the in-process wake-ups race-free (a claim that sees a key held subscribes before any later
//! `finish` of it can run). Between jobs it sweeps what has expired and, while the store
//! holds tasks, looks at the file for what other processes wrote for them.
//!
//! Group commit. A durable commit costs a sync of the log to the disk, which is most of a
//! claim's or a finish's time; while it runs, more calls queue up. The jobs found waiting
//! together (up to [`GROUP`]) share one `BEGIN IMMEDIATE` transaction, each as a savepoint of
//! it (a job that fails undoes only its own writes), and one commit: every job of the group
//! is answered only once that commit is durable, and all of them fail if it does not happen.
//! Nothing waits to fill a group: a job that finds the queue empty runs alone, as before. A
//! crash at any point leaves whole jobs committed or none of the group, and nobody was told
//! of a write that is not on disk.

use std::{
    path::PathBuf,
    sync::{Arc, mpsc},
    thread,
    time::{Duration, Instant},
};

use carmy_core::StoreError;
use tokio::sync::oneshot;

use super::{
    FIRST_POLL, LONGEST_POLL, db::Db, options::SqliteStoreOptions, task_holders::TaskHolders,
};

/// The most jobs one commit takes.
const GROUP: usize = 128;

/// A job's answer, sent once it is known whether the transaction it ran in committed: called
/// with why not, if it did not.
type Answer = Box<dyn FnOnce(Option<&str>) + Send>;

struct Job {
    work: Box<dyn FnOnce(&mut Db) -> Answer + Send>,
    /// May share its commit with others: it runs as one atomic step (`Db::atomic`).
    grouped: bool,
}

/// A handle on the thread: cheap to clone; the thread ends when the last handle is dropped.
#[derive(Clone, Debug)]
pub(super) struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    /// Opens `path` on a new thread and waits until it is ready (or could not be opened).
    pub(super) fn start(
        path: PathBuf,
        options: SqliteStoreOptions,
        holders: Arc<TaskHolders>,
    ) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, opened) = mpsc::sync_channel(1);
        thread::Builder::new()
            .name("carmy-store-sqlite".into())
            .spawn(move || {
                let db = match Db::open(&path, options, holders) {
                    Ok(db) => {
                        let _ = ready.send(Ok(()));
                        db
                    }
                    Err(error) => {
                        let _ = ready.send(Err(error));
                        return;
                    }
                };
                serve(db, &queue);
            })
            .map_err(StoreError::unavailable)?;
        opened
            .recv()
            .map_err(|_| StoreError::unavailable("the store's thread stopped while opening"))??;
        Ok(Self { jobs })
    }

    /// Runs `job` on the thread, in a transaction of its own, and waits for its answer
    /// without blocking the executor.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.send(job, false).await
    }

    /// Runs `job`, one atomic step (`Db::atomic`), in the next group's transaction, and waits
    /// until that transaction has committed.
    pub(super) async fn run_grouped<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.send(job, true).await
    }

    async fn send<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
        grouped: bool,
    ) -> Result<T, StoreError> {
        let (answer, answered) = oneshot::channel();
        let work = move |db: &mut Db| -> Answer {
            let result = job(db);
            Box::new(move |lost: Option<&str>| {
                let result = match (result, lost) {
                    (Ok(_), Some(why)) => Err(StoreError::unavailable(format!(
                        "the commit this call shared with others failed: {why}"
                    ))),
                    (result, _) => result,
                };
                let _ = answer.send(result);
            })
        };
        self.jobs
            .send(Job {
                work: Box::new(work),
                grouped,
            })
            .map_err(|_| StoreError::unavailable("the store's thread has stopped"))?;
        answered
            .await
            .map_err(|_| StoreError::unavailable("the store's thread stopped during a call"))?
    }
}

fn serve(mut db: Db, queue: &mpsc::Receiver<Job>) {
    let interval = db.options().sweep_interval.max(Duration::from_millis(10));
    let mut next_sweep = Instant::now() + interval;
    // The poll for other processes' task writes: soon after one was found, then less and less
    // often while none is, up to LONGEST_POLL (see `tasks`).
    let mut pause = FIRST_POLL;
    let mut next_poll = Instant::now();
    // A job that ended a group by not being groupable: it runs next.
    let mut held_back = None;
    loop {
        let polling = !db.holders.is_empty();
        let wake = if polling {
            next_sweep.min(next_poll)
        } else {
            next_sweep
        };
        let job = match held_back.take() {
            Some(job) => Some(job),
            None => match queue.recv_timeout(wake.saturating_duration_since(Instant::now())) {
                Ok(job) => Some(job),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            },
        };
        match job {
            Some(job) if job.grouped => {
                let mut group = vec![job];
                while group.len() < GROUP {
                    match queue.try_recv() {
                        Ok(job) if job.grouped => group.push(job),
                        Ok(job) => {
                            held_back = Some(job);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                run_group(&mut db, group);
            }
            Some(job) => (job.work)(&mut db)(None),
            None => {}
        }
        if !polling {
            // The first task held here is looked at from the start.
            (pause, next_poll) = (FIRST_POLL, Instant::now());
        } else if Instant::now() >= next_poll {
            pause = match db.poll_tasks() {
                Ok(true) => FIRST_POLL,
                Ok(false) => (pause * 2).min(LONGEST_POLL),
                Err(error) => {
                    tracing::warn!(%error, "the task store could not look for others' writes");
                    LONGEST_POLL
                }
            };
            next_poll = Instant::now() + pause;
        }
        if Instant::now() >= next_sweep {
            if let Err(error) = db.sweep() {
                tracing::warn!(%error, "the idempotency store could not sweep expired keys");
            }
            next_sweep = Instant::now() + interval;
        }
    }
}

/// Runs `group` in one transaction and answers its jobs once it has committed (a job alone
/// runs in a transaction of its own).
fn run_group(db: &mut Db, group: Vec<Job>) {
    if let [_] = group[..] {
        for job in group {
            (job.work)(db)(None);
        }
        return;
    }
    // If the file's write lock cannot be had, each job runs alone, and waits for it alone.
    let began = db.connection().execute_batch("BEGIN IMMEDIATE").is_ok();
    let mut answers = Vec::with_capacity(group.len());
    for job in group {
        // SQLite ends a transaction itself on some failures (a full disk, an I/O error): the
        // jobs after that run alone, each committed by its own transaction.
        let shared = !db.connection().is_autocommit();
        answers.push((shared, (job.work)(db)));
    }
    let lost = if db.connection().is_autocommit() {
        began.then(|| "the transaction was rolled back".to_owned())
    } else {
        db.connection().execute_batch("COMMIT").err().map(|error| {
            let _ = db.connection().execute_batch("ROLLBACK");
            error.to_string()
        })
    };
    db.group_ended();
    for (shared, answer) in answers {
        answer(if shared { lost.as_deref() } else { None });
    }
}
