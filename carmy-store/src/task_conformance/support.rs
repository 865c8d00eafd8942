//! What every scenario of the suite shares: its leases and retention, the tasks it creates, the
//! questions it asks and answers, and calls that fail the scenario when the store is slow or fails.

use std::{future::Future, time::Duration};

use carmy_core::{
    Ask, ExecutionId, ExecutionStatus, NewTask, Recorded, StoreError, TaskEnding, TaskKey,
    TaskLease, TaskRecord, TaskStatus, TaskStore,
};
use serde_json::{Value, json};
use tokio::time::timeout;

/// A lease no scenario outlives unless it means to.
pub(super) const LONG: Duration = Duration::from_secs(60);
/// A lease, or a retention, a scenario waits out.
pub(super) const SHORT: Duration = Duration::from_millis(300);
/// How long a change may take to be noticed.
pub(super) const NOTICE: Duration = Duration::from_secs(3);

pub(super) fn key(principal: &str, id: &str) -> TaskKey {
    TaskKey::new(Some(principal), id)
}

pub(super) fn new_task(key: &TaskKey, ttl: Duration) -> NewTask {
    NewTask::new(
        key.clone(),
        "slow_compute",
        ExecutionId::from("exec_1"),
        ttl,
        Duration::from_millis(500),
    )
}

pub(super) async fn within<T>(what: &str, call: impl Future<Output = Result<T, StoreError>>) -> T {
    match timeout(NOTICE, call).await {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => panic!("{what} failed: {error}"),
        Err(_) => panic!("{what} took more than {NOTICE:?}"),
    }
}

pub(super) async fn create<S: TaskStore>(
    store: &S,
    key: &TaskKey,
    ttl: Duration,
    lease: Duration,
) -> TaskLease {
    let created = within("creating a task", store.create(new_task(key, ttl), lease)).await;
    assert_eq!(&created.record.key, key);
    assert_eq!(created.record.status, TaskStatus::Working);
    created.lease
}

pub(super) async fn get<S: TaskStore>(store: &S, key: &TaskKey) -> Option<TaskRecord> {
    within("reading a task", store.get(key)).await
}

pub(super) async fn found<S: TaskStore>(store: &S, key: &TaskKey) -> TaskRecord {
    get(store, key)
        .await
        .unwrap_or_else(|| panic!("task {key:?} was not found"))
}

pub(super) fn succeeded(value: Value) -> TaskEnding {
    TaskEnding::new(Recorded::new(
        ExecutionId::from("exec_1"),
        ExecutionStatus::Succeeded,
        Ok(value),
    ))
}

pub(super) fn form(message: &str) -> Ask {
    Ask::input(
        message,
        json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } } }),
    )
}

pub(super) fn accept() -> Value {
    json!({ "action": "accept", "content": { "confirm": true } })
}
