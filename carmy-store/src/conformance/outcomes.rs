//! What a settled key answers, and to whom: its outcome replayed exactly, a conflict for
//! another fingerprint, and nothing across principals.

use carmy_core::{
    AgentError, Claim, ErrorCategory, ExecutionId, ExecutionStatus, IdempotencyKey,
    IdempotencyStore, Recorded, Release,
};
use serde_json::json;

use super::{
    opener::Opener,
    support::{LONG, acquire, claim, fingerprint, finished, key, succeeded, write},
};

/// A finished key replays its outcome, exactly as recorded (an error's every field, too), to
/// every retry.
pub async fn replay<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let outcomes = [
        succeeded("exec_ok"),
        Recorded::new(
            ExecutionId::from("exec_failed"),
            ExecutionStatus::Failed,
            Err(
                AgentError::new(ErrorCategory::Unavailable, "PAYMENTS_DOWN", "later")
                    .with_retryable(false)
                    .with_details(json!({ "retry_after_s": 3, "ratio": 0.1 }))
                    .with_next_tool("get_order"),
            ),
        ),
        Recorded::new(
            ExecutionId::from("exec_null"),
            ExecutionStatus::Failed,
            Err(AgentError::conflict("OUT_OF_STOCK", "none left").with_details(json!(null))),
        ),
        Recorded::new(
            ExecutionId::from("exec_nothing"),
            ExecutionStatus::Succeeded,
            Ok(json!(null)),
        ),
    ];
    for (n, outcome) in outcomes.into_iter().enumerate() {
        let key = key("alice", &format!("replay-{n}"));
        let lease = acquire(&*store, &key, fingerprint(1), write(LONG)).await;
        store.finish(&lease, outcome.clone()).await.unwrap();
        for _ in 0..3 {
            assert_eq!(finished(&*store, &key, fingerprint(1)).await, outcome);
        }
    }
}

/// The same request id with another fingerprint is a conflict, whatever became of the first.
pub async fn conflict<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let held = key("alice", "conflict-held");
    let lease = acquire(&*store, &held, fingerprint(1), write(LONG)).await;
    assert!(matches!(
        claim(&*store, &held, fingerprint(2), write(LONG)).await,
        Claim::Conflict
    ));
    store.finish(&lease, succeeded("exec_1")).await.unwrap();
    assert!(matches!(
        claim(&*store, &held, fingerprint(2), write(LONG)).await,
        Claim::Conflict
    ));
    assert_eq!(
        finished(&*store, &held, fingerprint(1)).await,
        succeeded("exec_1")
    );

    let uncertain = key("alice", "conflict-uncertain");
    let lease = acquire(&*store, &uncertain, fingerprint(1), write(LONG)).await;
    store
        .release(&lease, Release::Uncertain(ExecutionStatus::TimedOut))
        .await
        .unwrap();
    assert!(matches!(
        claim(&*store, &uncertain, fingerprint(2), write(LONG)).await,
        Claim::Conflict
    ));
}

/// One request id, several principals: several keys. Neither a claim, an outcome nor a
/// conflict crosses from one principal to another, however the parts could be joined.
pub async fn principals_never_meet<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open().await;
    let alice = key("alice", "r1");
    let lease = acquire(&*store, &alice, fingerprint(1), write(LONG)).await;
    store.finish(&lease, succeeded("exec_alice")).await.unwrap();
    // Another principal, another fingerprint: no conflict, a claim of its own.
    let bob = acquire(&*store, &key("bob", "r1"), fingerprint(2), write(LONG)).await;
    let anonymous = IdempotencyKey::new(None, "r1");
    acquire(&*store, &anonymous, fingerprint(3), write(LONG)).await;
    store.finish(&bob, succeeded("exec_bob")).await.unwrap();
    assert_eq!(
        finished(&*store, &alice, fingerprint(1)).await,
        succeeded("exec_alice")
    );
    assert_eq!(
        finished(&*store, &key("bob", "r1"), fingerprint(2)).await,
        succeeded("exec_bob")
    );
    // Keys whose parts would join into the same text are still two keys.
    for (principal, request_id) in [("a", "b:c"), ("a:b", "c"), ("a\0b", "c"), ("a", "b\0c")] {
        acquire(
            &*store,
            &key(principal, request_id),
            fingerprint(1),
            write(LONG),
        )
        .await;
    }
}
