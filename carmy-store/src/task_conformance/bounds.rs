//! Whose tasks are whose, and how many: a full share fails closed, and principals never meet.

use std::collections::BTreeMap;

use carmy_core::{Asks, StoreError, TaskId, TaskKey, TaskStatus, TaskStore};
use serde_json::json;
use tokio::time::timeout;

use super::{
    opener::TaskOpener,
    support::{LONG, NOTICE, accept, create, form, found, get, key, new_task, succeeded, within},
};

/// A principal at its bound is refused new tasks (`Full`), and nothing it holds is forgotten
/// to make room; other principals are not affected.
pub async fn capacity_fails_closed<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open_with(2).await;
    let done = key("alice", "task_a");
    let lease = create(&*store, &done, LONG, LONG).await;
    within("finishing", store.finish(&lease, succeeded(json!("a")))).await;
    let running = key("alice", "task_b");
    create(&*store, &running, LONG, LONG).await;
    for _ in 0..3 {
        match timeout(
            NOTICE,
            store.create(new_task(&key("alice", "task_c"), LONG), LONG),
        )
        .await
        {
            Ok(Err(StoreError::Full(_))) => {}
            other => panic!(
                "a full share must fail closed, got {:?}",
                other.map(|r| r.map(drop))
            ),
        }
    }
    assert_eq!(found(&*store, &done).await.status, TaskStatus::Completed);
    assert_eq!(found(&*store, &running).await.status, TaskStatus::Working);
    create(&*store, &key("bob", "task_c"), LONG, LONG).await;
}

/// A task is its owner's: another principal holding its id finds nothing, cancels nothing and
/// answers nothing; the anonymous principal is a principal too.
pub async fn principals_never_meet<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let id = TaskId::generate();
    let alice = TaskKey::new(Some("alice"), id.clone());
    let lease = create(&*store, &alice, LONG, LONG).await;
    within(
        "asking",
        store.ask(&lease, Asks::new().with("confirm.1", form("Sure?"))),
    )
    .await;
    for other in [
        TaskKey::new(Some("mallory"), id.clone()),
        TaskKey::new(None, id.clone()),
        TaskKey::new(Some("alice "), id.clone()),
    ] {
        assert!(get(&*store, &other).await.is_none());
        assert!(within("cancelling", store.cancel(&other)).await.is_none());
        let answers = BTreeMap::from([("confirm.1".to_owned(), accept())]);
        assert!(
            within("answering", store.respond(&other, answers))
                .await
                .is_none()
        );
    }
    let record = found(&*store, &alice).await;
    assert!(!record.cancel_requested);
    assert_eq!(record.status, TaskStatus::InputRequired);
    // The same id under another principal is another task.
    let bob = TaskKey::new(Some("bob"), id);
    create(&*store, &bob, LONG, LONG).await;
    assert_eq!(found(&*store, &bob).await.status, TaskStatus::Working);
}
