//! A task's life through the store's calls: its statuses as it works, asks and ends, and the
//! outcome it ended with, read back exactly.

use std::collections::BTreeMap;

use carmy_core::{
    AgentError, Asks, ErrorCategory, ExecutionId, ExecutionStatus, Recorded, StoreError,
    TaskEnding, TaskProgress, TaskReport, TaskStatus, TaskStore, codes,
};
use serde_json::json;

use super::{
    opener::TaskOpener,
    support::{LONG, accept, create, form, found, key, succeeded, within},
};

/// A task is working when created, waits for input while a question is unanswered, works
/// again once all are, and ends with the status its outcome says; progress and messages are
/// kept; `updatedAt` moves with each change.
pub async fn status_transitions<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let key = key("alice", "task_transitions");
    let lease = create(&*store, &key, LONG, LONG).await;
    let created = found(&*store, &key).await;
    assert_eq!(created.status, TaskStatus::Working);
    assert_eq!(
        (created.tool.as_str(), created.execution_id.as_str()),
        ("slow_compute", "exec_1")
    );
    assert!(created.outcome.is_none() && created.questions.is_empty());

    let report = TaskReport::new(
        Some(TaskProgress {
            done: 1.0,
            total: Some(4.0),
        }),
        Some("one of four".into()),
    );
    within("renewing", store.renew(&lease, LONG, Some(report))).await;
    let reported = found(&*store, &key).await;
    assert_eq!(reported.status_message.as_deref(), Some("one of four"));
    assert_eq!(reported.progress.unwrap().total, Some(4.0));
    assert!(reported.updated_at >= created.updated_at);

    within(
        "asking",
        store.ask(&lease, Asks::new().with("confirm.1", form("Sure?"))),
    )
    .await;
    let waiting = found(&*store, &key).await;
    assert_eq!(waiting.status, TaskStatus::InputRequired);
    assert_eq!(
        waiting.pending().map(|(key, _)| key).collect::<Vec<_>>(),
        ["confirm.1"]
    );
    assert_eq!(waiting.questions.iter().next().unwrap().1, &form("Sure?"));

    let answer = BTreeMap::from([("confirm.1".to_owned(), accept())]);
    within("answering", store.respond(&key, answer))
        .await
        .unwrap();
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);
    within("closing the questions", store.ask(&lease, Asks::new())).await;
    assert_eq!(found(&*store, &key).await.status, TaskStatus::Working);

    within(
        "finishing",
        store.finish(&lease, succeeded(json!({ "ok": true }))),
    )
    .await;
    let done = found(&*store, &key).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert!(done.questions.is_empty() && done.pending().next().is_none());
    assert_eq!(done.outcome.unwrap().result.unwrap(), json!({ "ok": true }));
    assert!(matches!(
        store.finish(&lease, succeeded(json!(2))).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.renew(&lease, LONG, None).await,
        Err(StoreError::LeaseLost)
    ));
}

/// What a task ended with reads back exactly, errors and the status they imply included.
pub async fn outcomes_round_trip<S: TaskStore>(opener: TaskOpener<S>) {
    let store = opener.open().await;
    let endings = [
        (
            succeeded(json!({ "n": 1.5, "list": [1, "two", null] })),
            TaskStatus::Completed,
        ),
        (
            TaskEnding::new(Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Failed,
                Err(
                    AgentError::new(ErrorCategory::Conflict, "OUT_OF_STOCK", "none left")
                        .with_retryable(true)
                        .with_details(json!({ "sku": "MOUSE-1" }))
                        .with_next_tool("search"),
                ),
            )),
            TaskStatus::Completed,
        ),
        (
            TaskEnding::new(Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Cancelled,
                Err(AgentError::new(
                    ErrorCategory::Cancelled,
                    codes::CANCELLED,
                    "stopped",
                )),
            )),
            TaskStatus::Cancelled,
        ),
        (
            TaskEnding::new(Recorded::new(
                ExecutionId::from("exec_1"),
                ExecutionStatus::Panicked,
                Err(AgentError::internal("the tool panicked")),
            )),
            TaskStatus::Failed,
        ),
    ];
    for (n, (ending, status)) in endings.into_iter().enumerate() {
        let key = key("alice", &format!("task_outcome_{n}"));
        let lease = create(&*store, &key, LONG, LONG).await;
        within("finishing", store.finish(&lease, ending.clone())).await;
        let record = found(&*store, &key).await;
        assert_eq!(record.status, status);
        assert_eq!(record.outcome.as_ref(), Some(ending.outcome()));
    }
}
