//! `completion/complete` over MCP, in both lifecycles with rmcp's client.

use crate::common;

use carmy_core::{
    AgentError, Carmy, CompletionRequest, Completions, Invocation, Prompt, PromptSpec, Resource,
    ResourceSpec, Runtime,
};
use carmy_mcp::McpServer;
use common::{LIFECYCLES, Lifecycle, Session, connect};
use rmcp::model::{ArgumentInfo, CompleteRequestParams, ErrorCode, Reference};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Review {
    order_id: String,
}

struct ReviewOrder;
impl Prompt for ReviewOrder {
    type Input = Review;
    type Output = String;
    const SPEC: PromptSpec = PromptSpec::new("review_order");
    const COMPLETES: &'static [&'static str] = &["order_id"];
    async fn render(&self, input: Review, _: Invocation) -> Result<String, AgentError> {
        Ok(input.order_id)
    }
    async fn complete(&self, request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
        let typed = request.value().to_owned();
        Ok(Completions::new(
            (1000..1250)
                .map(|n| format!("ord-{n}"))
                .filter(|id| id.starts_with(&typed)),
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
struct ProductRef {
    id: String,
}

struct Product;
impl Resource for Product {
    type Input = ProductRef;
    type Output = String;
    const SPEC: ResourceSpec = ResourceSpec::new("product", "shop://products/{id}");
    const COMPLETES: &'static [&'static str] = &["id"];
    async fn read(&self, input: ProductRef, _: Invocation) -> Result<String, AgentError> {
        Ok(input.id)
    }
    async fn complete(&self, request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
        Ok(Completions::starting_with(
            request.value(),
            ["sku-001", "sku-002", "mouse"],
        ))
    }
}

async fn session(lifecycle: Lifecycle) -> Session {
    let runtime: Runtime = Carmy::new()
        .prompt(ReviewOrder)
        .resource(Product)
        .build()
        .expect("catalog");
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(runtime).serve_io(read, write));
    connect(lifecycle, client_io).await.0
}

fn ask(reference: Reference, argument: &str, value: &str) -> CompleteRequestParams {
    CompleteRequestParams::new(reference, ArgumentInfo::new(argument, value))
}

#[tokio::test]
async fn arguments_and_variables_complete_at_most_a_hundred_at_a_time() {
    for lifecycle in LIFECYCLES {
        let client = session(lifecycle).await;
        assert!(
            client
                .peer_info()
                .and_then(|info| info.capabilities.completions.clone())
                .is_some(),
            "{lifecycle:?}: the completions capability"
        );
        let many = client
            .complete(ask(
                Reference::for_prompt("review_order"),
                "order_id",
                "ord-1",
            ))
            .await
            .expect("complete");
        assert_eq!(many.completion.values.len(), 100, "{lifecycle:?}");
        assert_eq!(many.completion.total, Some(250));
        assert_eq!(many.completion.has_more, Some(true));
        let few = client
            .complete(ask(
                Reference::for_resource("shop://products/{id}"),
                "id",
                "SKU",
            ))
            .await
            .expect("complete");
        assert_eq!(few.completion.values, ["sku-001", "sku-002"]);
        assert_eq!(few.completion.has_more, Some(false));
        client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn a_reference_or_an_argument_that_names_nothing_is_invalid_params() {
    for lifecycle in LIFECYCLES {
        let client = session(lifecycle).await;
        for (reference, argument) in [
            (Reference::for_prompt("nope"), "order_id"),
            (Reference::for_prompt("review_order"), "sneaky"),
            (Reference::for_resource("shop://nothing/{id}"), "id"),
        ] {
            let error = client
                .complete(ask(reference.clone(), argument, "x"))
                .await
                .expect_err("refused");
            let rmcp::ServiceError::McpError(error) = error else {
                panic!("{error:?}");
            };
            assert_eq!(
                error.code,
                ErrorCode::INVALID_PARAMS,
                "{lifecycle:?} {reference:?}"
            );
        }
        client.cancel().await.expect("close");
    }
}
