//! Bounds: a full share fails closed for new keys, through the store and through the runtime.

use carmy_core::{
    AgentError, Carmy, Context, Effect, ErrorCategory, ExecutionStatus, IdempotencyStore,
    Invocation, Request, StoreError, Tool, ToolSpec,
};
use serde_json::{Value, json};
use tokio::time::timeout;

use super::{
    opener::Opener,
    support::{LONG, NOTICE, acquire, fingerprint, finished, key, running, succeeded, write},
};

/// A principal at its bound gets `Full` for new keys, and nothing it holds (finished or running)
/// is forgotten to make room; other principals are not affected.
pub async fn capacity_fails_closed<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open_with(2).await;
    let done = key("alice", "a");
    let lease = acquire(&*store, &done, fingerprint(1), write(LONG)).await;
    store.finish(&lease, succeeded("exec_a")).await.unwrap();
    let held = key("alice", "b");
    acquire(&*store, &held, fingerprint(1), write(LONG)).await;
    for _ in 0..3 {
        match timeout(
            NOTICE,
            store.claim(&key("alice", "c"), fingerprint(1), write(LONG)),
        )
        .await
        {
            Ok(Err(StoreError::Full(_))) => {}
            other => panic!("a full share must fail closed, got {other:?}"),
        }
    }
    assert_eq!(
        finished(&*store, &done, fingerprint(1)).await,
        succeeded("exec_a")
    );
    drop(running(&*store, &held, fingerprint(1), write(LONG)).await);
    acquire(&*store, &key("bob", "c"), fingerprint(1), write(LONG)).await;
}

/// The tools of [`a_full_share_refuses_new_writes_only`]: a write, a read and an idempotent
/// write, each answering with its arguments.
struct Echo<const E: u8>;

const fn echo_spec(effect: u8) -> ToolSpec {
    match effect {
        0 => ToolSpec::new("place_order", Effect::Write),
        1 => ToolSpec::new("find_order", Effect::Read),
        _ => ToolSpec::new("set_address", Effect::Write).idempotent(true),
    }
}

impl<const E: u8> Tool for Echo<E> {
    type Input = serde_json::Map<String, Value>;
    type Output = Value;
    const SPEC: ToolSpec = echo_spec(E);

    async fn run(
        &self,
        input: serde_json::Map<String, Value>,
        _: Invocation,
    ) -> Result<Value, AgentError> {
        Ok(Value::Object(input))
    }
}

/// Through the runtime, a principal past its share meets `CAPACITY` (retryable) for a write
/// under a new request id, and only there: what it holds is still replayed, reads and
/// idempotent tools under fresh ids (which claim nothing) keep running, and another principal
/// has a share of its own.
pub async fn a_full_share_refuses_new_writes_only<S: IdempotencyStore>(opener: Opener<S>) {
    let store = opener.open_with(2).await;
    let runtime = Carmy::new()
        .tool(Echo::<0>)
        .tool(Echo::<1>)
        .tool(Echo::<2>)
        .idempotency_store(store)
        .build()
        .expect("a runtime");
    let call = |principal: &str, tool: &str, id: &str| {
        Request::new(tool, json!({ "id": id }))
            .request_id(id)
            .context(Context::new().with_principal(principal))
    };
    for id in ["w-1", "w-2"] {
        let placed = runtime.execute(call("alice", "place_order", id)).await;
        assert_eq!(placed.status, ExecutionStatus::Succeeded, "{placed:?}");
    }
    let refused = runtime.execute(call("alice", "place_order", "w-3")).await;
    let error = refused.error().expect("a write past the share is refused");
    assert_eq!(
        (
            refused.status,
            error.code(),
            error.category(),
            error.retryable()
        ),
        (
            ExecutionStatus::Rejected,
            "CAPACITY",
            ErrorCategory::Capacity,
            true
        ),
        "{refused:?}"
    );
    let replayed = runtime.execute(call("alice", "place_order", "w-1")).await;
    assert_eq!(replayed.status, ExecutionStatus::Replayed, "{replayed:?}");
    for n in 0..5 {
        for tool in ["find_order", "set_address"] {
            let outcome = runtime
                .execute(call("alice", tool, &format!("{tool}-{n}")))
                .await;
            assert_eq!(outcome.status, ExecutionStatus::Succeeded, "{outcome:?}");
        }
    }
    let bob = runtime.execute(call("bob", "place_order", "w-3")).await;
    assert_eq!(bob.status, ExecutionStatus::Succeeded, "{bob:?}");
}
