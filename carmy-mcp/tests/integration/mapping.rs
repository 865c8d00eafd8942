//! One test per row of the Carmy → MCP mapping, each in both lifecycles, through rmcp's client.

use crate::common;

use carmy_core::{Context, ExecutionId, ExecutionStatus};
use carmy_mcp::{
    META_CONFIRMATION, META_EFFECT, META_ERROR, META_EXECUTION_ID, META_PARALLEL_SAFE,
    META_REQUEST_ID, META_STATUS,
};
use common::{LIFECYCLES, Lifecycle, call, call_with, in_process, meta, text_json, with_meta};
use rmcp::model::{CacheScope, ErrorCode, ProtocolVersion, Tool, ToolAnnotations};
use serde_json::{Value, json};

async fn tools(lifecycle: Lifecycle) -> Vec<Tool> {
    let session = in_process(lifecycle, Context::new()).await;
    let listed = session.client.list_tools(None).await.expect("tools/list");
    assert_eq!(listed.ttl_ms, Some(60_000), "{lifecycle:?}");
    assert_eq!(
        listed.cache_scope,
        Some(CacheScope::Public),
        "{lifecycle:?}"
    );
    assert_eq!(listed.next_cursor, None, "the whole catalog is one page");
    let names: Vec<&str> = listed.tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "lookup",
            "place_order",
            "delete_order",
            "send_email",
            "word_count",
            "shout",
            "slow"
        ],
        "registration order"
    );
    listed.tools
}

fn hints(tool: &Tool) -> [bool; 4] {
    let annotations: &ToolAnnotations = tool.annotations.as_ref().expect("annotations");
    let hint = |hint: Option<bool>, name: &str| {
        hint.unwrap_or_else(|| panic!("`{}` has no explicit {name}", tool.name))
    };
    [
        hint(annotations.read_only_hint, "readOnlyHint"),
        hint(annotations.destructive_hint, "destructiveHint"),
        hint(annotations.idempotent_hint, "idempotentHint"),
        hint(annotations.open_world_hint, "openWorldHint"),
    ]
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("no tool `{name}`"))
}

const READ_ONLY: usize = 0;
const DESTRUCTIVE: usize = 1;
const IDEMPOTENT: usize = 2;
const OPEN_WORLD: usize = 3;

/// Which testbed tools have each hint set; every other hint must be an explicit `false`.
fn assert_hint(tools: &[Tool], hint: usize, expected: &[&str]) {
    for tool in tools {
        let set = hints(tool)[hint];
        assert_eq!(
            set,
            expected.contains(&tool.name.as_ref()),
            "hint #{hint} of `{}`",
            tool.name
        );
    }
}

#[tokio::test]
async fn none_and_read_effects_are_read_only() {
    for lifecycle in LIFECYCLES {
        let tools = tools(lifecycle).await;
        assert_hint(
            &tools,
            READ_ONLY,
            &["lookup", "word_count", "shout", "slow"],
        );
    }
}

#[tokio::test]
async fn destructive_effect_is_destructive() {
    for lifecycle in LIFECYCLES {
        let tools = tools(lifecycle).await;
        assert_hint(&tools, DESTRUCTIVE, &["delete_order"]);
    }
}

#[tokio::test]
async fn external_write_effect_is_open_world() {
    for lifecycle in LIFECYCLES {
        let tools = tools(lifecycle).await;
        assert_hint(&tools, OPEN_WORLD, &["send_email"]);
    }
}

#[tokio::test]
async fn idempotent_tools_are_idempotent() {
    for lifecycle in LIFECYCLES {
        let tools = tools(lifecycle).await;
        assert_hint(&tools, IDEMPOTENT, &["delete_order"]);
    }
}

#[tokio::test]
async fn effect_confirmation_and_parallel_safety_are_in_meta() {
    for lifecycle in LIFECYCLES {
        let tools = tools(lifecycle).await;
        let policy = |name: &str| {
            let meta = tool(&tools, name).meta.as_ref().expect("_meta");
            (
                meta[META_EFFECT].clone(),
                meta[META_CONFIRMATION].clone(),
                meta[META_PARALLEL_SAFE].clone(),
            )
        };
        assert_eq!(
            policy("lookup"),
            (json!("read"), json!("none"), json!(true))
        );
        assert_eq!(
            policy("word_count"),
            (json!("none"), json!("none"), json!(true))
        );
        assert_eq!(
            policy("place_order"),
            (json!("write"), json!("none"), json!(false))
        );
        assert_eq!(
            policy("delete_order"),
            (json!("destructive"), json!("required"), json!(false))
        );
        assert_eq!(
            policy("send_email"),
            (json!("external_write"), json!("none"), json!(false))
        );
    }
}

#[tokio::test]
async fn title_description_and_schemas_come_from_the_tool() {
    for lifecycle in LIFECYCLES {
        let tools = tools(lifecycle).await;
        let lookup = tool(&tools, "lookup");
        assert_eq!(lookup.title.as_deref(), Some("Look up a product"));
        assert_eq!(
            lookup.annotations.as_ref().and_then(|a| a.title.as_deref()),
            Some("Look up a product")
        );
        assert_eq!(
            lookup.description.as_deref(),
            Some("Finds a product by SKU.")
        );
        assert_eq!(lookup.input_schema["required"], json!(["sku"]));
        assert_eq!(
            lookup.input_schema["properties"]["limit"]["type"],
            "integer"
        );
        let output = lookup
            .output_schema
            .as_ref()
            .expect("object output is published");
        assert_eq!(output["type"], "object");

        // Non-object output: no outputSchema.
        let shout = tool(&tools, "shout");
        assert_eq!(shout.input_schema["type"], "object");
        assert!(shout.output_schema.is_none());
        assert!(tool(&tools, "word_count").output_schema.is_none());
        assert_eq!(tool(&tools, "place_order").title, None);
    }
}

#[tokio::test]
async fn every_published_schema_is_portable() {
    let tools = tools(Lifecycle::Initialize).await;
    for tool in &tools {
        carmy_core::schema::check_portable(&Value::Object((*tool.input_schema).clone()))
            .unwrap_or_else(|problems| panic!("input of `{}`: {problems}", tool.name));
        if let Some(output) = &tool.output_schema {
            carmy_core::schema::check_portable(&Value::Object((**output).clone()))
                .unwrap_or_else(|problems| panic!("output of `{}`: {problems}", tool.name));
        }
    }
}

#[tokio::test]
async fn object_results_are_structured_content_and_json_text() {
    for lifecycle in LIFECYCLES {
        let session = in_process(lifecycle, Context::new()).await;
        let result = call(&session.client, "lookup", json!({ "sku": "MOUSE-1" })).await;
        let expected = json!({ "sku": "MOUSE-1", "name": "Mouse", "stock": 12 });
        assert_eq!(result.is_error, Some(false));
        assert_eq!(
            result.structured_content,
            Some(expected.clone()),
            "{lifecycle:?}"
        );
        assert_eq!(text_json(&result), expected);

        // Anything but an object: JSON text only.
        let result = call(&session.client, "word_count", json!({ "text": "one two" })).await;
        assert_eq!(result.structured_content, None);
        assert_eq!(text_json(&result), json!(2));
        let result = call(&session.client, "shout", json!({})).await;
        assert_eq!(
            result.is_error,
            Some(true),
            "arguments without `text`: {result:?}"
        );
    }
}

#[tokio::test]
async fn agent_errors_are_is_error_results_with_the_envelope() {
    for lifecycle in LIFECYCLES {
        let session = in_process(lifecycle, Context::new()).await;
        let result = call(&session.client, "lookup", json!({ "sku": "NOPE" })).await;
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            result.structured_content, None,
            "never structuredContent on errors"
        );
        let envelope = text_json(&result);
        assert_eq!(envelope["error"]["code"], "PRODUCT_NOT_FOUND", "{envelope}");
        assert_eq!(envelope["error"]["category"], "not_found");
        assert_eq!(envelope["error"]["retryable"], false);
        assert_eq!(envelope["error"]["next_tool"], "lookup");
        assert_eq!(meta(&result, META_ERROR), &envelope["error"]);

        // Policy errors from the runtime take the same shape.
        let result = call(
            &session.client,
            "delete_order",
            json!({ "order_id": "o-1" }),
        )
        .await;
        assert_eq!(result.is_error, Some(true));
        assert_eq!(meta(&result, META_ERROR)["code"], "CONFIRMATION_REQUIRED");
    }
}

#[tokio::test]
async fn invalid_arguments_name_the_bad_field() {
    for lifecycle in LIFECYCLES {
        let session = in_process(lifecycle, Context::new()).await;
        let result = call(
            &session.client,
            "place_order",
            json!({ "sku": "M", "quantity": "two" }),
        )
        .await;
        assert_eq!(result.is_error, Some(true));
        let error = meta(&result, META_ERROR);
        assert_eq!(error["code"], "INVALID_ARGUMENTS", "{error}");
        assert_eq!(
            error["details"]["errors"][0]["path"], "/quantity",
            "{error}"
        );
        assert!(
            error["message"].as_str().unwrap().contains("/quantity"),
            "{error}"
        );
        assert_eq!(meta(&result, META_STATUS), "rejected");
        assert_eq!(
            session.order_runs.load(std::sync::atomic::Ordering::SeqCst),
            0
        );
    }
}

#[tokio::test]
async fn unknown_tools_are_invalid_params_with_the_envelope() {
    for lifecycle in LIFECYCLES {
        let session = in_process(lifecycle, Context::new()).await;
        let error = call_with(
            &session.client,
            "lookupp",
            json!({}),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .expect_err("no such tool");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{lifecycle:?}");
        assert!(error.message.contains("lookupp"), "{}", error.message);
        let data = error.data.expect("data");
        assert_eq!(data["error"]["code"], "TOOL_NOT_FOUND", "{data}");
        assert_eq!(data["error"]["category"], "not_found");
    }
}

#[tokio::test]
async fn request_id_in_meta_makes_the_call_idempotent() {
    for lifecycle in LIFECYCLES {
        let session = in_process(lifecycle, Context::new()).await;
        let order = json!({ "sku": "MOUSE-1", "quantity": 1 });
        let first = call_with(
            &session.client,
            "place_order",
            order.clone(),
            with_meta(json!({ META_REQUEST_ID: "order-7f3a" })),
        )
        .await
        .unwrap();
        let retry = call_with(
            &session.client,
            "place_order",
            order.clone(),
            with_meta(json!({ META_REQUEST_ID: "order-7f3a" })),
        )
        .await
        .unwrap();
        assert_eq!(
            session.order_runs.load(std::sync::atomic::Ordering::SeqCst),
            1
        );
        assert_eq!(retry.structured_content, first.structured_content);
        assert_eq!(meta(&first, META_STATUS), "succeeded");
        assert_eq!(meta(&retry, META_STATUS), "replayed");
        assert_eq!(
            meta(&retry, META_EXECUTION_ID),
            meta(&first, META_EXECUTION_ID)
        );

        // A new key is a new call; no key, too.
        let other = call_with(
            &session.client,
            "place_order",
            order.clone(),
            with_meta(json!({ META_REQUEST_ID: "order-8b1c" })),
        )
        .await
        .unwrap();
        assert_eq!(other.structured_content.unwrap()["runs"], 2);
        call(&session.client, "place_order", order.clone()).await;
        assert_eq!(
            session.order_runs.load(std::sync::atomic::Ordering::SeqCst),
            3
        );

        // The same key with other arguments is refused, not replayed.
        let conflict = call_with(
            &session.client,
            "place_order",
            json!({ "sku": "MOUSE-1", "quantity": 2 }),
            with_meta(json!({ META_REQUEST_ID: "order-7f3a" })),
        )
        .await
        .unwrap();
        assert_eq!(meta(&conflict, META_ERROR)["code"], "IDEMPOTENCY_CONFLICT");

        // A request id that is not a string is a protocol error.
        let error = call_with(
            &session.client,
            "place_order",
            order,
            with_meta(json!({ META_REQUEST_ID: 42 })),
        )
        .await
        .expect_err("numeric request id");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains(META_REQUEST_ID), "{}", error.message);
        assert_eq!(
            session.order_runs.load(std::sync::atomic::Ordering::SeqCst),
            3
        );
    }
}

#[tokio::test]
async fn results_carry_the_execution_id_and_status() {
    for lifecycle in LIFECYCLES {
        let session = in_process(lifecycle, Context::new()).await;
        let cases = [
            (
                "lookup",
                json!({ "sku": "MOUSE-1" }),
                "succeeded",
                ExecutionStatus::Succeeded,
            ),
            (
                "lookup",
                json!({ "sku": "NOPE" }),
                "failed",
                ExecutionStatus::Failed,
            ),
            (
                "delete_order",
                json!({ "order_id": "o" }),
                "rejected",
                ExecutionStatus::Rejected,
            ),
        ];
        for (name, arguments, status, recorded) in cases {
            let result = call(&session.client, name, arguments).await;
            assert_eq!(meta(&result, META_STATUS), status, "{name}");
            let id = meta(&result, META_EXECUTION_ID)
                .as_str()
                .expect("a string id");
            assert!(id.starts_with("exec_"), "{id}");
            let record = session
                .runtime
                .execution(&ExecutionId::from(id))
                .expect("the runtime knows the execution");
            assert_eq!(record.status, recorded);
            assert_eq!(record.target, name);
        }
    }
}

#[tokio::test]
async fn results_follow_the_negotiated_protocol() {
    for lifecycle in LIFECYCLES {
        let session = in_process(lifecycle, Context::new()).await;
        let result = call(&session.client, "lookup", json!({ "sku": "MOUSE-1" })).await;
        // 2026-07-28 results say `resultType: complete`; older peers never see the field.
        assert_eq!(
            result.result_type.is_some(),
            lifecycle == Lifecycle::Discover,
            "{lifecycle:?}: {result:?}"
        );
        let info = session.client.peer_info().expect("server info");
        let expected = match lifecycle {
            Lifecycle::Initialize => ProtocolVersion::V_2025_11_25,
            Lifecycle::Discover => ProtocolVersion::V_2026_07_28,
        };
        assert_eq!(info.protocol_version, expected);
        assert_eq!(
            info.server_info.as_ref().map(|info| info.name.as_str()),
            Some("carmy-mcp")
        );
    }
}
