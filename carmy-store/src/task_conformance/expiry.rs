//! Time: a task kept for its ttl once it ended, a lease that runs out failing its task, and
//! renewals keeping it.

use std::time::Duration;

use carmy_core::{Asks, ExecutionStatus, StoreError, TaskStatus, TaskStore, codes};
use serde_json::json;
use tokio::time::{Instant, sleep};

use super::{
    opener::TaskOpener,
    support::{LONG, SHORT, create, found, get, key, succeeded, within},
};

/// A task that ended is kept for its `ttl`, counted from its end (not its start), then
/// forgotten; `sweep` forgets it too, and says so.
pub async fn kept_for_its_ttl_then_forgotten<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_ttl");
    let lease = create(&*store, &key, SHORT, LONG).await;
    // Running for longer than its ttl does not expire it.
    sleep(SHORT + Duration::from_millis(100)).await;
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);
    within("finishing", store.finish(&lease, succeeded(json!(1)))).await;
    sleep(SHORT / 3).await;
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Completed);
    sleep(SHORT + Duration::from_millis(100)).await;
    assert!(get(&*store, &key).await.is_none(), "kept past its ttl");

    let swept = self::key("alice", "task_swept");
    let lease = create(&*store, &swept, SHORT, LONG).await;
    within("finishing", store.finish(&lease, succeeded(json!(2)))).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    let forgotten = within("sweeping", store.sweep()).await;
    assert!(forgotten >= 1, "the sweep forgot {forgotten} tasks");
    assert!(get(&*store, &swept).await.is_none());
}

/// A task whose holder stops renewing fails once its lease runs out: `failed`, its execution
/// `lost` with `EXECUTION_LOST`; the late holder's calls fail with `LeaseLost` and change
/// nothing.
pub async fn lease_loss_fails_the_task<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_lost");
    let lease = create(&*store, &key, LONG, SHORT).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    let lost = found(&*store, &key).await;
    assert_eq!(lost.status, TaskStatus::Failed);
    let outcome = lost.outcome.expect("a failed task says why");
    assert_eq!(outcome.status, ExecutionStatus::Lost);
    assert_eq!(outcome.result.unwrap_err().code(), codes::EXECUTION_LOST);
    assert!(matches!(
        store.renew(&lease, LONG, None).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.ask(&lease, Asks::new()).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.finish(&lease, succeeded(json!("late"))).await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Failed);

    // A lost task is kept for its ttl like any task that ended, and the sweep settles the
    // ones nobody looked at.
    let unseen = self::key("alice", "task_lost_unseen");
    create(&*store, &unseen, LONG, SHORT).await;
    sleep(SHORT + Duration::from_millis(100)).await;
    within("sweeping", store.sweep()).await;
    assert_eq!(found(&*store, &unseen).await.status, TaskStatus::Failed);
}

/// A holder that renews keeps its task, however long the task runs.
pub async fn renewals_keep_a_task<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_renewed");
    let lease = create(&*store, &key, LONG, SHORT).await;
    let until = Instant::now() + SHORT * 3;
    while Instant::now() < until {
        sleep(SHORT / 3).await;
        within("renewing", store.renew(&lease, SHORT, None)).await;
    }
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);
    within("finishing", store.finish(&lease, succeeded(json!(1)))).await;
}
