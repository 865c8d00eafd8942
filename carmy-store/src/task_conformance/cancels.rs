//! Cancel requests: recorded, and told to the holder, while the task runs; nothing once it ended.

use carmy_core::{
    AgentError, ErrorCategory, ExecutionId, ExecutionStatus, Recorded, TaskEnding, TaskStatus,
    TaskStore, codes,
};
use serde_json::json;
use tokio::time::timeout;

use super::{
    opener::TaskOpener,
    support::{LONG, NOTICE, create, found, key, succeeded, within},
};

/// A cancel request is recorded (the task runs on until its holder stops it), wakes the
/// holder's `changed`, and is in every renewal's signals from then on.
pub async fn cancel_reaches_the_holder<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_cancel");
    let lease = create(&*store, &key, LONG, LONG).await;
    assert!(
        !within("renewing", store.renew(&lease, LONG, None))
            .await
            .cancel_requested
    );
    let changed = store.changed(&lease);
    let cancelled = within("cancelling", store.cancel(&key)).await.unwrap();
    assert!(cancelled.cancel_requested);
    assert_eq!(cancelled.status, TaskStatus::Working);
    timeout(NOTICE, changed)
        .await
        .expect("the holder was not told of the cancel request");
    for _ in 0..2 {
        assert!(
            within("renewing", store.renew(&lease, LONG, None))
                .await
                .cancel_requested
        );
    }
    let ending = TaskEnding::new(Recorded::new(
        ExecutionId::from("exec_1"),
        ExecutionStatus::Cancelled,
        Err(AgentError::new(
            ErrorCategory::Cancelled,
            codes::CANCELLED,
            "cancelled",
        )),
    ));
    within("finishing", store.finish(&lease, ending)).await;
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Cancelled);
}

/// Cancelling a task that ended changes nothing and succeeds, as often as asked.
pub async fn cancel_of_an_ended_task_changes_nothing<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_cancel_ended");
    let lease = create(&*store, &key, LONG, LONG).await;
    within("finishing", store.finish(&lease, succeeded(json!("done")))).await;
    let before = found(&*store, &key).await;
    for _ in 0..3 {
        let after = within("cancelling", store.cancel(&key)).await.unwrap();
        assert_eq!(after.status, TaskStatus::Completed);
        assert_eq!(after.outcome, before.outcome);
    }
    assert!(
        within(
            "cancelling nothing",
            store.cancel(&self::key("alice", "task_none"))
        )
        .await
        .is_none()
    );
}
