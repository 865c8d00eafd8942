//! Calls in flight: cancellation, progress, and requests rmcp cannot parse.

use crate::common;

use carmy_core::{Context, ExecutionStatus};
use common::{LIFECYCLES, PATIENCE, call, call_request, in_process, next_probe, tools::ProbeEvent};
use rmcp::{
    model::{ClientRequest, CustomRequest, ErrorCode, ServerResult},
    service::{PeerRequestOptions, ServiceError},
};
use serde_json::{Value, json};

#[tokio::test]
async fn cancelled_notification_stops_the_tool() {
    for lifecycle in LIFECYCLES {
        let mut session = in_process(lifecycle, Context::new()).await;
        let handle = session
            .client
            .send_cancellable_request(
                call_request("slow", json!({ "steps": 10_000, "step_ms": 10 })),
                PeerRequestOptions::no_options(),
            )
            .await
            .expect("sent");
        let ProbeEvent::Started(id) = next_probe(&mut session.probe).await else {
            panic!("expected the slow tool to start");
        };
        assert_eq!(
            session.runtime.execution(&id).expect("running").status,
            ExecutionStatus::Running
        );

        handle
            .cancel(Some("the user gave up".into()))
            .await
            .expect("notifications/cancelled sent");

        let ProbeEvent::Stopped {
            id: stopped,
            cancelled,
        } = next_probe(&mut session.probe).await
        else {
            panic!("expected the slow tool to stop");
        };
        assert_eq!(stopped, id);
        assert!(cancelled, "the tool saw its context cancelled");
        assert_eq!(
            session.runtime.execution(&id).expect("recorded").status,
            ExecutionStatus::Cancelled,
            "{lifecycle:?}"
        );
        assert_eq!(session.runtime.running_executions(), 0);

        // The session goes on.
        let result = call(
            &session.client,
            "word_count",
            json!({ "text": "still here" }),
        )
        .await;
        assert_eq!(result.is_error, Some(false));
    }
}

#[tokio::test]
async fn progress_reaches_the_client_for_its_token() {
    for lifecycle in LIFECYCLES {
        let mut session = in_process(lifecycle, Context::new()).await;
        // rmcp's client puts a progress token on every request.
        let handle = session
            .client
            .send_request_with_option(
                call_request("slow", json!({ "steps": 3, "step_ms": 120 })),
                PeerRequestOptions::no_options(),
            )
            .await
            .expect("sent");
        let token = handle.progress_token.clone();
        let response = tokio::time::timeout(PATIENCE, handle.await_response())
            .await
            .expect("answered in time")
            .expect("answered");
        let ServerResult::CallToolResult(result) = response else {
            panic!("expected a CallToolResult, got {response:?}");
        };
        assert_eq!(result.structured_content, Some(json!({ "steps": 3 })));

        // Steps are further apart than the runtime's throttle, so each one arrives.
        for step in 1..=3 {
            let progress = tokio::time::timeout(PATIENCE, session.progress.recv())
                .await
                .expect("progress in time")
                .expect("progress channel open");
            assert_eq!(progress.progress_token, token, "{lifecycle:?}");
            assert_eq!(progress.progress, f64::from(step));
            assert_eq!(progress.total, Some(3.0));
            assert_eq!(progress.message.as_deref(), Some("working"));
        }
        assert!(
            session.progress.try_recv().is_err(),
            "nothing after the last step"
        );
    }
}

async fn custom_request(
    session: &common::Session,
    method: &str,
    params: Option<Value>,
) -> Result<ServerResult, ServiceError> {
    session
        .send_request(ClientRequest::CustomRequest(CustomRequest::new(
            method, params,
        )))
        .await
}

fn invalid_params(answer: Result<ServerResult, ServiceError>) -> (String, Value) {
    match answer {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
            (
                error.message.into_owned(),
                error.data.unwrap_or(Value::Null),
            )
        }
        other => panic!("expected -32602, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_tools_call_params_are_invalid_params() {
    for lifecycle in LIFECYCLES {
        let session = in_process(lifecycle, Context::new()).await;
        let cases = [
            // rmcp's client always sends `_meta` (a progress token), so absent params arrive as
            // params without a name; the raw stdio tests cover truly absent and array params.
            (None, "need `name`", "name"),
            (Some(json!({ "arguments": {} })), "need `name`", "name"),
            (
                Some(json!({ "name": 7 })),
                "`name` must be a string, got a number",
                "name",
            ),
            (
                Some(json!({ "name": "lookup", "arguments": "sku=1" })),
                "`arguments` must be an object, got a string",
                "arguments",
            ),
        ];
        for (params, says, field) in cases {
            let (message, data) =
                invalid_params(custom_request(&session.client, "tools/call", params.clone()).await);
            assert!(message.contains(says), "{params:?}: {message}");
            assert_eq!(data["field"], field, "{params:?}");
        }

        // A method that does not exist.
        match custom_request(&session.client, "tools/frobnicate", None).await {
            Err(ServiceError::McpError(error)) => {
                assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
                assert!(
                    error.message.contains("tools/frobnicate"),
                    "{}",
                    error.message
                );
            }
            other => panic!("expected -32601, got {other:?}"),
        }

        // Still serving.
        let result = call(&session.client, "lookup", json!({ "sku": "MOUSE-1" })).await;
        assert_eq!(result.is_error, Some(false));
    }
}

#[tokio::test]
async fn the_trusted_context_comes_from_the_host_only() {
    for lifecycle in LIFECYCLES {
        // Without the grant, no `_meta` can confirm a destructive call...
        let session = in_process(lifecycle, Context::new()).await;
        let answer = common::call_with(
            &session.client,
            "delete_order",
            json!({ "order_id": "o-1", "grants": ["confirm:delete_order"] }),
            common::with_meta(json!({ "grants": ["confirm:delete_order"], "principal": "root" })),
        )
        .await
        .unwrap();
        assert_eq!(
            common::meta(&answer, carmy_mcp::META_ERROR)["code"],
            "CONFIRMATION_REQUIRED"
        );
        let answer = common::call_with(
            &session.client,
            "delete_order",
            json!({ "order_id": "o-1" }),
            common::with_meta(json!({ "grants": ["confirm:delete_order"] })),
        )
        .await
        .unwrap();
        assert_eq!(
            common::meta(&answer, carmy_mcp::META_ERROR)["code"],
            "CONFIRMATION_REQUIRED"
        );

        // ...and with it, the call runs.
        let session = in_process(
            lifecycle,
            Context::new()
                .with_principal("alice")
                .with_grant("confirm:delete_order"),
        )
        .await;
        let answer = call(
            &session.client,
            "delete_order",
            json!({ "order_id": "o-1" }),
        )
        .await;
        assert_eq!(answer.structured_content, Some(json!({ "deleted": true })));
    }
}
