//! Completion of prompt arguments and resource template variables, through the runtime.

use carmy_core::{
    AgentError, BuildProblem, Carmy, Complete, CompletionRequest, CompletionTarget, Completions,
    ExecutionKind, ExecutionStatus, Invocation, OutcomeKind, Prompt, PromptSpec, Request, Resource,
    ResourceSpec, Runtime,
};
use schemars::JsonSchema;
use serde::Deserialize;

const ORDERS: [&str; 4] = ["ord-1001", "ord-1002", "ord-2001", "ret-1"];

#[derive(Deserialize, JsonSchema)]
struct Review {
    order_id: String,
    focus: Option<String>,
}

struct ReviewOrder;
impl Prompt for ReviewOrder {
    type Input = Review;
    type Output = String;
    const SPEC: PromptSpec = PromptSpec::new("review_order");
    const COMPLETES: &'static [&'static str] = &["order_id"];
    async fn render(&self, input: Review, _: Invocation) -> Result<String, AgentError> {
        Ok(format!("{} {:?}", input.order_id, input.focus))
    }
    async fn complete(&self, request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
        match request.value() {
            "boom" => panic!("a bug in the completion"),
            "many" => Ok(Completions::new((0..150).map(|n| format!("ord-{n}")))),
            // The principal's own orders only, say.
            typed if request.context().principal() == Some("bob") => {
                Ok(Completions::starting_with(typed, ["ord-9999"]))
            }
            typed => Ok(Completions::starting_with(typed, ORDERS)),
        }
    }
}

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
    async fn read(&self, input: OrderRef, _: Invocation) -> Result<String, AgentError> {
        Ok(input.id)
    }
    async fn complete(&self, request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
        Ok(Completions::starting_with(request.value(), ORDERS))
    }
}

fn runtime() -> Runtime {
    Carmy::new()
        .prompt(ReviewOrder)
        .resource(Order)
        .build()
        .expect("catalog")
}

fn prompt(argument: &str, value: &str) -> Request<Complete> {
    Request::complete(
        CompletionTarget::Prompt("review_order".into()),
        argument,
        value,
    )
}

#[tokio::test]
async fn prompt_arguments_and_template_variables_complete() {
    let runtime = runtime();
    let outcome = runtime.complete(prompt("order_id", "ORD-1")).await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    assert_eq!(outcome.result.unwrap().values(), ["ord-1001", "ord-1002"]);
    let outcome = runtime
        .complete(Request::complete(
            CompletionTarget::Resource("shop://orders/{id}".into()),
            "id",
            "ret",
        ))
        .await;
    assert_eq!(outcome.result.unwrap().values(), ["ret-1"]);
    let record = runtime.execution(&outcome.execution_id).unwrap();
    assert_eq!(record.kind, ExecutionKind::Complete);
    assert_eq!(record.target, "order");
    // The context reaches the completion.
    let bob = runtime
        .complete(
            prompt("order_id", "ord").context(carmy_core::Context::new().with_principal("bob")),
        )
        .await;
    assert_eq!(bob.result.unwrap().values(), ["ord-9999"]);
}

#[tokio::test]
async fn at_most_a_hundred_values_come_back() {
    let outcome = runtime().complete(prompt("order_id", "many")).await;
    let completions = outcome.result.unwrap();
    assert_eq!(completions.values().len(), 100);
    assert_eq!(completions.total(), 150);
    assert!(completions.has_more());
}

#[tokio::test]
async fn what_cannot_complete_says_why() {
    let runtime = runtime();
    // An argument that does not complete: no suggestion, and nothing ran.
    let quiet = runtime.complete(prompt("focus", "x")).await;
    assert!(quiet.result.unwrap().values().is_empty());
    let unknown = runtime.complete(prompt("sneaky", "x")).await;
    assert_eq!(unknown.unwrap_error_code(), "INVALID_ARGUMENTS");
    let long = runtime
        .complete(prompt("order_id", &"x".repeat(2000)))
        .await;
    assert_eq!(long.unwrap_error_code(), "INVALID_ARGUMENTS");
    let nothing = runtime
        .complete(Request::complete(
            CompletionTarget::Prompt("nope".into()),
            "a",
            "b",
        ))
        .await;
    assert_eq!(nothing.kind, OutcomeKind::Unroutable);
    assert_eq!(nothing.unwrap_error_code(), "PROMPT_NOT_FOUND");
    let fixed = runtime
        .complete(Request::complete(
            CompletionTarget::Resource("shop://orders/ord-1".into()),
            "id",
            "x",
        ))
        .await;
    assert_eq!(fixed.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    let panicked = runtime.complete(prompt("order_id", "boom")).await;
    assert_eq!(panicked.status, ExecutionStatus::Panicked);
}

#[test]
fn completing_what_is_not_an_argument_is_refused_at_build() {
    struct Wrong;
    impl Prompt for Wrong {
        type Input = Review;
        type Output = String;
        const SPEC: PromptSpec = PromptSpec::new("wrong");
        const COMPLETES: &'static [&'static str] = &["order"];
        async fn render(&self, _: Review, _: Invocation) -> Result<String, AgentError> {
            Ok(String::new())
        }
    }
    let error = Carmy::new().prompt(Wrong).build().unwrap_err();
    assert!(
        error.problems().iter().any(|problem| matches!(
            problem,
            BuildProblem::InvalidPrompt { reason, .. } if reason.contains("it completes `order`")
        )),
        "{error}"
    );
}
