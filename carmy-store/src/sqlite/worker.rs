//! The one thread that talks to the file.
//!
//! SQLite calls block (on the disk, and on another process's write lock for up to the busy
//! timeout), so none may run on the async executor's threads. One dedicated thread owns the
//! connection and runs the store's jobs in the order they arrive: SQLite serializes writers
//! anyway, so a pool of connections would only wait on one another, and a single owner makes
//! the in-process wake-ups race-free (a claim that sees a key held subscribes before any later
//! `finish` of it can run). Between jobs it sweeps what has expired and, while the store
//! holds tasks, looks at the file for what other processes wrote for them.

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

type Job = Box<dyn FnOnce(&mut Db) + Send>;

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

    /// Runs `job` on the thread and waits for its answer without blocking the executor.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = oneshot::channel();
        self.jobs
            .send(Box::new(move |db| {
                let _ = answer.send(job(db));
            }))
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
    loop {
        let polling = !db.holders.is_empty();
        let wake = if polling {
            next_sweep.min(next_poll)
        } else {
            next_sweep
        };
        match queue.recv_timeout(wake.saturating_duration_since(Instant::now())) {
            Ok(job) => job(&mut db),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
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
