//! A catalog that changes while it serves: a disabled tool, resource or prompt is unknown to
//! every request, as if it had never been registered, until it is enabled again; listeners hear
//! which lists changed, once per change, and nothing when a change changes no list.

use crate::common;

use carmy_core::{
    AgentError, Carmy, CompletionRequest, CompletionTarget, Completions, Context, Disabled,
    ExecutionStatus, Invocation, ListsChanged, Prompt, PromptSpec, Request, Resource, ResourceSpec,
    Runtime,
};
use common::Shop;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn disabled(rules: &[&str]) -> Disabled {
    Disabled::parse(rules).unwrap()
}

fn place(context: Context) -> Request {
    Request::new("place_order", json!({ "order_id": "ord-1" })).context(context)
}

#[tokio::test]
async fn a_disabled_tool_is_unknown_until_it_is_enabled_again() {
    let shop = Shop::new();
    let runtime = shop.carmy().build().unwrap();
    let changed = runtime.catalog().disable(disabled(&["place_*"]));
    assert!(changed.tools && !changed.resources && !changed.prompts);

    let refused = runtime.execute(place(Context::new())).await;
    assert_eq!(refused.unwrap_error_code(), "TOOL_NOT_FOUND");
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    assert_eq!(refused.kind, carmy_core::OutcomeKind::Unroutable);
    assert_eq!(shop.places.started(), 0);
    // Answered exactly as a tool that was never registered.
    let never = runtime
        .execute(Request::new("plaice_order", json!({ "order_id": "ord-1" })))
        .await;
    assert_eq!(
        serde_json::to_string(never.error().unwrap())
            .unwrap()
            .replace("plaice_order", "place_order"),
        serde_json::to_string(refused.error().unwrap()).unwrap()
    );
    assert!(runtime.catalog().get("place_order").is_none());
    assert!(runtime.catalog().registered("place_order").is_some());
    // The others run on.
    let get = Request::new("get_order", json!({ "order_id": "ord-1" }));
    assert!(runtime.execute(get).await.is_ok());

    let changed = runtime.catalog().disable(Disabled::none());
    assert!(changed.tools);
    assert!(runtime.execute(place(Context::new())).await.is_ok());
    assert_eq!(shop.places.started(), 1);
}

#[tokio::test]
async fn a_caller_held_to_some_tools_gets_its_answer_for_a_missing_one() {
    let runtime = Shop::new().carmy().build().unwrap();
    runtime.catalog().disable(disabled(&["effect:write"]));
    let held = Context::new().with_access("*_order".parse().unwrap());
    // Its rules allow the tool, but the catalog serves it no more: the answer is the one this
    // caller gets for any tool that does not exist.
    assert_eq!(
        runtime.execute(place(held)).await.unwrap_error_code(),
        "TOOL_NOT_ALLOWED"
    );
}

#[tokio::test]
async fn a_call_that_is_running_when_its_tool_is_disabled_runs_to_its_end() {
    let shop = Shop::new();
    let runtime = shop.carmy().build().unwrap();
    let slow = Request::new("get_order", json!({ "order_id": "ord-1", "millis": 100 }));
    let running = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.execute(slow).await }
    });
    common::wait_until(|| shop.gets.running() == 1).await;
    runtime.catalog().disable(disabled(&["get_order"]));
    let outcome = running.await.unwrap();
    assert!(outcome.is_ok(), "{:?}", outcome.error());
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[derive(Deserialize, JsonSchema)]
struct OrderRef {
    id: String,
}

struct Order;
impl Resource for Order {
    type Input = OrderRef;
    type Output = String;
    const SPEC: ResourceSpec = ResourceSpec::new("order", "shop://orders/{id}");
    const COMPLETES: &'static [&'static str] = &["id"];

    async fn complete(&self, request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
        Ok(Completions::starting_with(request.value(), ["1", "10"]))
    }

    async fn read(&self, input: OrderRef, _: Invocation) -> Result<String, AgentError> {
        Ok(input.id)
    }
}

struct Policy;
impl Resource for Policy {
    type Input = Nothing;
    type Output = String;
    const SPEC: ResourceSpec = ResourceSpec::new("returns", "docs://policies/returns");
    async fn read(&self, _: Nothing, _: Invocation) -> Result<String, AgentError> {
        Ok("30 days".into())
    }
}

struct Greeting;
impl Prompt for Greeting {
    type Input = Nothing;
    type Output = String;
    const SPEC: PromptSpec = PromptSpec::new("support_greeting");
    async fn render(&self, _: Nothing, _: Invocation) -> Result<String, AgentError> {
        Ok("Hello".into())
    }
}

fn catalog() -> Runtime {
    Carmy::new()
        .resource(Order)
        .resource(Policy)
        .prompt(Greeting)
        .build()
        .unwrap()
}

#[tokio::test]
async fn disabled_resources_and_prompts_are_not_found() {
    let runtime = catalog();
    let changed = runtime.catalog().disable(disabled(&[
        "resource:shop://orders/*",
        "resource:docs://policies/returns",
        "prompt:support_*",
    ]));
    assert!(changed.resources && changed.prompts && !changed.tools);

    let read = runtime.read(Request::read("shop://orders/7")).await;
    assert_eq!(read.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    let read = runtime.read(Request::read("docs://policies/returns")).await;
    assert_eq!(read.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    let got = runtime
        .get_prompt(Request::get_prompt("support_greeting"))
        .await;
    assert_eq!(got.unwrap_error_code(), "PROMPT_NOT_FOUND");
    let template = CompletionTarget::Resource("shop://orders/{id}".into());
    let completed = runtime
        .complete(Request::complete(template.clone(), "id", "1"))
        .await;
    assert_eq!(completed.unwrap_error_code(), "RESOURCE_NOT_FOUND");

    runtime.catalog().disable(Disabled::none());
    assert!(runtime.read(Request::read("shop://orders/7")).await.is_ok());
    assert!(
        runtime
            .get_prompt(Request::get_prompt("support_greeting"))
            .await
            .is_ok()
    );
    let completed = runtime
        .complete(Request::complete(template, "id", "1"))
        .await;
    assert!(completed.is_ok(), "{:?}", completed.error());
}

#[tokio::test]
async fn a_template_is_disabled_by_its_template_and_a_uri_by_itself() {
    let runtime = catalog();
    // One URI the template serves, not the template.
    runtime
        .catalog()
        .disable(disabled(&["resource:shop://orders/7"]));
    let read = runtime.read(Request::read("shop://orders/7")).await;
    assert_eq!(read.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    assert!(runtime.read(Request::read("shop://orders/8")).await.is_ok());
}

#[tokio::test]
async fn listeners_hear_which_lists_changed() {
    let runtime = catalog();
    let mut changes = runtime.catalog().changes();
    // No tool in this catalog: disabling tools changes no list.
    assert!(!runtime.catalog().disable(disabled(&["*"])).any());
    runtime.catalog().disable(disabled(&["prompt:*"]));
    assert_eq!(
        changes.changed().await,
        Some(ListsChanged {
            prompts: true,
            ..ListsChanged::default()
        })
    );
    runtime
        .catalog()
        .disable(disabled(&["prompt:*", "resource:docs://*"]));
    let heard = changes.changed().await.unwrap();
    assert!(heard.resources && !heard.prompts && !heard.tools);
}
