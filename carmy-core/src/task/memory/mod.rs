//! The default task store: in this process's memory, bounded by count and bytes, with a share
//! per principal.
//!
//! As with idempotency keys, a task is never forgotten early to make room: its owner polls for
//! an outcome it was promised. So the bounds are shares: each principal may hold so many tasks
//! and bytes (running, or ended and kept for their `ttl`); one who fills its share is refused
//! new tasks (`CAPACITY`, retryable) until its own oldest expire, and nobody else notices. The
//! totals are bounded too, and fail closed the same way. An outcome too large to keep is kept
//! as a note that the call ran (`OUTCOME_NOT_KEPT`).
//!
//! Expiry runs on the tokio clock, so tests may pause time; the timestamps handed to clients
//! are the system clock's.

mod table;

use std::{
    collections::BTreeMap,
    fmt,
    future::Future,
    sync::Mutex,
    time::{Duration, SystemTime},
};

use serde_json::Value;
use tokio::time::Instant;

use super::{
    Created, NewTask, Responded, TaskEnding, TaskKey, TaskLease, TaskRecord, TaskReport,
    TaskSignals, TaskStore,
};
use crate::{
    ask::Asks,
    idempotency::{Recorded, StoreError, not_kept, outcome_bytes, value_bytes},
    sync::lock,
};

pub use table::MemoryTaskStoreLimits;
use table::{Tasks, asks_bytes, record_bytes};

/// The default task store: in memory, bounded per principal and in total. Tasks live and die
/// with the process; share one (in an `Arc`) between runtimes of one process, or implement
/// [`TaskStore`] over a database to share tasks across replicas.
pub struct MemoryTaskStore {
    limits: MemoryTaskStoreLimits,
    inner: Mutex<Tasks>,
}

impl MemoryTaskStore {
    /// A store with the given bounds.
    pub fn new(limits: MemoryTaskStoreLimits) -> Self {
        Self {
            limits,
            inner: Mutex::new(Tasks::default()),
        }
    }

    /// Number of tasks held (running, or ended and not yet forgotten).
    pub fn len(&self) -> usize {
        lock(&self.inner).len()
    }

    /// Whether no task is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the tasks held are counted for.
    pub fn bytes(&self) -> usize {
        lock(&self.inner).bytes()
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::new(MemoryTaskStoreLimits::default())
    }
}

impl fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("limits", &self.limits)
            .field("len", &self.len())
            .finish()
    }
}

impl TaskStore for MemoryTaskStore {
    async fn create(&self, task: NewTask, lease: Duration) -> Result<Created, StoreError> {
        let now = Instant::now();
        let mut tasks = lock(&self.inner);
        if tasks.contains(&task.key) {
            return Err(StoreError::unavailable(
                "a task with this id already exists",
            ));
        }
        let record = TaskRecord::created(task, SystemTime::now());
        let bytes = record_bytes(&record);
        let principal = record.key.principal();
        if tasks.full(principal, bytes, &self.limits.tasks) {
            tasks.sweep(now);
        }
        if tasks.full(principal, bytes, &self.limits.tasks) {
            return Err(StoreError::Full(
                "too many tasks are kept for this caller; retry once older ones expire".into(),
            ));
        }
        let key = record.key.clone();
        let token = tasks.add(record.clone(), bytes, now + lease);
        Ok(Created::new(TaskLease::new(key, token), record))
    }

    async fn get(&self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        let mut tasks = lock(&self.inner);
        Ok(tasks
            .live(key, Instant::now())
            .map(|entry| entry.record.clone()))
    }

    async fn cancel(&self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        let mut tasks = lock(&self.inner);
        let Some(entry) = tasks.live(key, Instant::now()) else {
            return Ok(None);
        };
        if !entry.record.status.is_terminal() && !entry.record.cancel_requested {
            entry.record.cancel_requested = true;
            entry.record.updated_at = SystemTime::now();
            entry.changed.send_replace(());
        }
        Ok(Some(entry.record.clone()))
    }

    async fn respond(
        &self,
        key: &TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> Result<Option<Responded>, StoreError> {
        let mut tasks = lock(&self.inner);
        let extra: usize = answers
            .iter()
            .map(|(key, answer)| key.len() + value_bytes(answer))
            .sum();
        let fits = tasks.fits(key.principal(), extra, &self.limits.tasks);
        let Some(entry) = tasks.live(key, Instant::now()) else {
            return Ok(None);
        };
        let waiting = entry.record.pending().next().is_some();
        if waiting && !fits {
            return Err(StoreError::Full(
                "the answers do not fit in what this caller may keep".into(),
            ));
        }
        let responded = entry.record.take_answers(answers, SystemTime::now());
        if !responded.accepted.is_empty() {
            entry.changed.send_replace(());
            tasks.reweigh(key);
        }
        Ok(Some(responded))
    }

    async fn renew(
        &self,
        lease: &TaskLease,
        duration: Duration,
        report: Option<TaskReport>,
    ) -> Result<TaskSignals, StoreError> {
        let now = Instant::now();
        let mut tasks = lock(&self.inner);
        let entry = tasks.held(lease, now)?;
        if let Some(holder) = &mut entry.holder {
            holder.expires = now + duration;
        }
        let signals = entry.record.signals();
        if let Some(report) = report {
            entry.record.apply(report, SystemTime::now());
            tasks.reweigh(lease.key());
        }
        Ok(signals)
    }

    async fn ask(&self, lease: &TaskLease, questions: Asks) -> Result<(), StoreError> {
        let now = Instant::now();
        let mut tasks = lock(&self.inner);
        let extra = asks_bytes(&questions);
        let fits = tasks.fits(lease.key().principal(), extra, &self.limits.tasks);
        let entry = tasks.held(lease, now)?;
        if !fits {
            return Err(StoreError::Full(
                "the questions do not fit in what this caller may keep".into(),
            ));
        }
        entry.record.set_questions(questions, SystemTime::now());
        tasks.reweigh(lease.key());
        Ok(())
    }

    async fn finish(&self, lease: &TaskLease, ending: TaskEnding) -> Result<(), StoreError> {
        let now = Instant::now();
        let mut tasks = lock(&self.inner);
        tasks.held(lease, now)?;
        let size = outcome_bytes(ending.outcome());
        let fits = size <= self.limits.tasks.max_outcome_bytes
            && tasks.fits(lease.key().principal(), size, &self.limits.tasks);
        let ending = if fits {
            ending
        } else {
            // The call ran: its owner is told so, even if its outcome cannot be kept.
            let recorded: Recorded = ending.outcome().clone();
            TaskEnding::new(not_kept(recorded, size))
        };
        let entry = tasks.held(lease, now)?;
        entry.holder = None;
        entry.ended = Some(now);
        entry.record.end(ending, SystemTime::now());
        entry.changed.send_replace(());
        tasks.reweigh(lease.key());
        Ok(())
    }

    fn changed(&self, lease: &TaskLease) -> impl Future<Output = ()> + Send {
        // Subscribed now: a change from here on is seen.
        let receiver = lock(&self.inner).watch(lease);
        async move {
            if let Some(mut receiver) = receiver {
                // A send, or the entry dropped: either way, time to look.
                let _ = receiver.changed().await;
            }
        }
    }

    async fn sweep(&self) -> Result<usize, StoreError> {
        Ok(lock(&self.inner).sweep(Instant::now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ask::Ask,
        execution::{ExecutionId, ExecutionStatus},
        task::TaskStatus,
    };
    use serde_json::json;

    const LEASE: Duration = Duration::from_secs(30);

    fn task(principal: &str, id: &str) -> NewTask {
        NewTask::new(
            TaskKey::new(Some(principal), id),
            "slow",
            ExecutionId::from("exec_1"),
            Duration::from_secs(60),
            Duration::from_millis(500),
        )
    }

    fn succeeded(value: Value) -> TaskEnding {
        TaskEnding::new(Recorded::new(
            ExecutionId::from("exec_1"),
            ExecutionStatus::Succeeded,
            Ok(value),
        ))
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_is_kept_for_its_ttl_after_it_ends() {
        let store = MemoryTaskStore::default();
        let created = store.create(task("alice", "t1"), LEASE).await.unwrap();
        let key = created.lease.key().clone();
        // Running past its ttl is fine: the ttl counts from the end.
        for _ in 0..6 {
            tokio::time::advance(Duration::from_secs(20)).await;
            store.renew(&created.lease, LEASE, None).await.unwrap();
        }
        store
            .finish(&created.lease, succeeded(json!({ "n": 1 })))
            .await
            .unwrap();
        tokio::time::advance(Duration::from_secs(59)).await;
        let record = store.get(&key).await.unwrap().unwrap();
        assert_eq!(record.status, TaskStatus::Completed);
        assert_eq!(record.outcome.unwrap().result.unwrap(), json!({ "n": 1 }));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(store.get(&key).await.unwrap().is_none());
        assert!(store.is_empty());
        assert_eq!(store.bytes(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lease_that_runs_out_fails_the_task() {
        let store = MemoryTaskStore::default();
        let created = store
            .create(task("alice", "t1"), Duration::from_secs(5))
            .await
            .unwrap();
        tokio::time::advance(Duration::from_secs(6)).await;
        let record = store.get(created.lease.key()).await.unwrap().unwrap();
        assert_eq!(record.status, TaskStatus::Failed);
        let outcome = record.outcome.unwrap();
        assert_eq!(outcome.status, ExecutionStatus::Lost);
        assert_eq!(outcome.result.unwrap_err().code(), "EXECUTION_LOST");
        assert!(matches!(
            store.renew(&created.lease, LEASE, None).await,
            Err(StoreError::LeaseLost)
        ));
        assert!(matches!(
            store.finish(&created.lease, succeeded(json!(1))).await,
            Err(StoreError::LeaseLost)
        ));
    }

    #[tokio::test]
    async fn a_full_share_refuses_new_tasks_and_forgets_nothing() {
        let store = MemoryTaskStore::new(
            MemoryTaskStoreLimits::default()
                .with_tasks(|tasks| tasks.with_max_per_principal(2).with_max(3)),
        );
        for id in ["a", "b"] {
            store.create(task("alice", id), LEASE).await.unwrap();
        }
        assert!(matches!(
            store.create(task("alice", "c"), LEASE).await,
            Err(StoreError::Full(_))
        ));
        store.create(task("bob", "a"), LEASE).await.unwrap();
        assert!(matches!(
            store.create(task("carol", "a"), LEASE).await,
            Err(StoreError::Full(_))
        ));
        for (principal, id) in [("alice", "a"), ("alice", "b"), ("bob", "a")] {
            assert!(
                store
                    .get(&TaskKey::new(Some(principal), id))
                    .await
                    .unwrap()
                    .is_some()
            );
        }
        assert!(matches!(
            store.create(task("bob", "a"), LEASE).await,
            Err(StoreError::Unavailable(_))
        ));
    }

    #[tokio::test]
    async fn a_large_outcome_is_kept_as_a_note() {
        let store = MemoryTaskStore::new(
            MemoryTaskStoreLimits::default().with_tasks(|tasks| tasks.with_max_outcome_bytes(1024)),
        );
        let created = store.create(task("alice", "t"), LEASE).await.unwrap();
        store
            .finish(&created.lease, succeeded(json!("x".repeat(4096))))
            .await
            .unwrap();
        let record = store.get(created.lease.key()).await.unwrap().unwrap();
        assert_eq!(record.status, TaskStatus::Completed);
        let error = record.outcome.unwrap().result.unwrap_err();
        assert_eq!(error.code(), "OUTCOME_NOT_KEPT");
        assert!(store.bytes() < 2048, "{}", store.bytes());
    }

    #[tokio::test]
    async fn changed_is_armed_when_called() {
        let store = MemoryTaskStore::default();
        let created = store.create(task("alice", "t"), LEASE).await.unwrap();
        let changed = store.changed(&created.lease);
        store.cancel(created.lease.key()).await.unwrap();
        tokio::time::timeout(Duration::from_secs(1), changed)
            .await
            .expect("the cancel, made before the first poll, wakes the holder");
        let signals = store.renew(&created.lease, LEASE, None).await.unwrap();
        assert!(signals.cancel_requested);
        // A lease that is not the holder's waits for nothing.
        let stranger = TaskLease::new(created.lease.key().clone(), 999);
        tokio::time::timeout(Duration::from_secs(1), store.changed(&stranger))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn answers_and_reports_reach_the_record() {
        let store = MemoryTaskStore::default();
        let created = store.create(task("alice", "t"), LEASE).await.unwrap();
        let key = created.lease.key().clone();
        store
            .ask(
                &created.lease,
                Asks::new().with("name.1", Ask::input("Name?", json!({}))),
            )
            .await
            .unwrap();
        let before = store.bytes();
        let responded = store
            .respond(
                &key,
                BTreeMap::from([("name.1".into(), json!({ "action": "accept" }))]),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(responded.accepted, ["name.1"]);
        assert!(store.bytes() > before);
        let report = TaskReport::new(
            Some(crate::task::TaskProgress {
                done: 1.0,
                total: Some(2.0),
            }),
            Some("halfway".into()),
        );
        let signals = store
            .renew(&created.lease, LEASE, Some(report))
            .await
            .unwrap();
        assert_eq!(signals.answers["name.1"]["action"], "accept");
        let record = store.get(&key).await.unwrap().unwrap();
        assert_eq!(record.status, TaskStatus::Working);
        assert_eq!(record.status_message.as_deref(), Some("halfway"));
        assert_eq!(record.progress.unwrap().total, Some(2.0));
        // Another principal, holding the id, finds nothing and changes nothing.
        let mallory = TaskKey::new(Some("mallory"), key.id().clone());
        assert!(store.get(&mallory).await.unwrap().is_none());
        assert!(store.cancel(&mallory).await.unwrap().is_none());
        assert!(
            store
                .respond(&mallory, BTreeMap::new())
                .await
                .unwrap()
                .is_none()
        );
    }
}
