//! Prompts over MCP, in both lifecycles with rmcp's client: the list with arguments from the
//! input's fields, renders with text, images and embedded resources, and the errors.

use crate::common;

use base64::Engine as _;
use carmy_core::{
    AgentError, Carmy, Content, Invocation, Message, Messages, Prompt, PromptSpec, Role, Runtime,
};
use carmy_mcp::McpServer;
use common::{LIFECYCLES, Lifecycle, Session, connect};
use rmcp::model::{ContentBlock, ErrorCode, GetPromptRequestParams, ResourceContents};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Review {
    /// The order to review.
    order_id: String,
    /// What to focus on.
    focus: Option<String>,
}

struct ReviewOrder;
impl Prompt for ReviewOrder {
    type Input = Review;
    type Output = Messages;
    const SPEC: PromptSpec = PromptSpec::new("review_order")
        .title("Review an order")
        .description("Ask for a review of one order.");
    async fn render(&self, input: Review, _: Invocation) -> Result<Messages, AgentError> {
        let focus = input.focus.unwrap_or_else(|| "anything unusual".into());
        Ok(Messages::new()
            .with(Message::user(format!(
                "Review {} for {focus}.",
                input.order_id
            )))
            .with(Message::image(Role::User, vec![1, 2, 3], "image/png"))
            .with(Message::resource(
                Role::Assistant,
                Content::text("{}")
                    .uri(format!("shop://orders/{}", input.order_id))
                    .mime_type("application/json"),
            )))
    }
}

async fn session(lifecycle: Lifecycle) -> Session {
    let runtime: Runtime = Carmy::new().prompt(ReviewOrder).build().expect("catalog");
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(runtime).serve_io(read, write));
    connect(lifecycle, client_io).await.0
}

fn get(arguments: serde_json::Value) -> GetPromptRequestParams {
    GetPromptRequestParams::new("review_order")
        .with_arguments(arguments.as_object().cloned().unwrap())
}

#[tokio::test]
async fn prompts_are_listed_with_their_arguments() {
    for lifecycle in LIFECYCLES {
        let client = session(lifecycle).await;
        assert!(
            client
                .peer_info()
                .and_then(|info| info.capabilities.prompts.clone())
                .is_some(),
            "{lifecycle:?}: the prompts capability"
        );
        let prompts = client.list_prompts(None).await.expect("list").prompts;
        assert_eq!(prompts.len(), 1);
        assert_eq!(prompts[0].name, "review_order");
        assert_eq!(prompts[0].title.as_deref(), Some("Review an order"));
        let arguments: Vec<_> = prompts[0]
            .arguments
            .iter()
            .flatten()
            .map(|a| (a.name.as_str(), a.description.as_deref(), a.required))
            .collect();
        assert_eq!(
            arguments,
            [
                ("order_id", Some("The order to review."), Some(true)),
                ("focus", Some("What to focus on."), Some(false)),
            ],
            "{lifecycle:?}"
        );
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn a_render_carries_text_images_and_embedded_resources() {
    for lifecycle in LIFECYCLES {
        let client = session(lifecycle).await;
        let result = client
            .get_prompt(get(json!({ "order_id": "ord-1", "focus": "shipping" })))
            .await
            .expect("get");
        assert_eq!(
            result.description.as_deref(),
            Some("Ask for a review of one order.")
        );
        assert_eq!(result.messages.len(), 3, "{lifecycle:?}");
        match &result.messages[0].content {
            ContentBlock::Text(text) => assert_eq!(text.text, "Review ord-1 for shipping."),
            other => panic!("{other:?}"),
        }
        match &result.messages[1].content {
            ContentBlock::Image(image) => {
                assert_eq!(image.mime_type, "image/png");
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&image.data)
                    .unwrap();
                assert_eq!(bytes, [1, 2, 3]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(result.messages[2].role, rmcp::model::Role::Assistant);
        match &result.messages[2].content {
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, mime_type, .. } => {
                    assert_eq!(uri, "shop://orders/ord-1");
                    assert_eq!(mime_type.as_deref(), Some("application/json"));
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn a_missing_argument_or_an_unknown_prompt_is_invalid_params() {
    for lifecycle in LIFECYCLES {
        let client = session(lifecycle).await;
        let error = client
            .get_prompt(get(json!({})))
            .await
            .expect_err("missing");
        let rmcp::ServiceError::McpError(error) = error else {
            panic!("{error:?}");
        };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("`order_id`"), "{}", error.message);
        let error = client
            .get_prompt(GetPromptRequestParams::new("nope"))
            .await
            .expect_err("unknown");
        let rmcp::ServiceError::McpError(error) = error else {
            panic!("{error:?}");
        };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{lifecycle:?}");
        assert_eq!(error.data.unwrap()["error"]["code"], "PROMPT_NOT_FOUND");
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn a_caller_held_to_other_prompts_sees_none_and_is_refused() {
    for lifecycle in LIFECYCLES {
        let runtime: Runtime = Carmy::new().prompt(ReviewOrder).build().expect("catalog");
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(server_io);
        let access = "prompt:support_*".parse().expect("rules");
        let server =
            McpServer::new(runtime).context(carmy_core::Context::new().with_access(access));
        tokio::spawn(server.serve_io(read, write));
        let client = connect(lifecycle, client_io).await.0;
        let listed = client.list_prompts(None).await.expect("list");
        assert!(listed.prompts.is_empty(), "{lifecycle:?}: {listed:?}");
        let error = client
            .get_prompt(get(json!({ "order_id": "ord-1" })))
            .await
            .expect_err("refused");
        let rmcp::ServiceError::McpError(error) = error else {
            panic!("{error:?}");
        };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{lifecycle:?}");
        assert_eq!(error.data.unwrap()["error"]["code"], "PROMPT_NOT_ALLOWED");
        client.cancel().await.expect("close");
    }
}
