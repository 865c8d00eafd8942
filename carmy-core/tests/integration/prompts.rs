//! Prompts, rendered through the runtime: their arguments from the input's fields, checked
//! (missing, unknown, not strings), the guard, the record, and what `build()` refuses.

use carmy_core::{
    AgentError, BuildProblem, Carmy, Content, ExecutionKind, ExecutionStatus, Invocation, Message,
    MessageContent, Messages, OutcomeKind, Prompt, PromptSpec, Request, Role, Runtime,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
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
        if input.order_id == "ord-0" {
            panic!("a bug in the prompt");
        }
        let focus = input.focus.unwrap_or_else(|| "anything unusual".into());
        Ok(Messages::new()
            .with(Message::user(format!(
                "Review order {} for {focus}.",
                input.order_id
            )))
            .with(Message::resource(
                Role::User,
                Content::text("{}").uri(format!("shop://orders/{}", input.order_id)),
            ))
            .with(Message::assistant("Looking at it."))
            .description(format!("A review of {}", input.order_id)))
    }
}

fn runtime() -> Runtime {
    Carmy::new()
        .prompt(ReviewOrder)
        .build()
        .expect("valid catalog")
}

#[test]
fn arguments_come_from_the_input_required_first() {
    let runtime = runtime();
    let prompt = runtime.catalog().prompt("review_order").unwrap();
    let arguments: Vec<_> = prompt
        .arguments()
        .iter()
        .map(|argument| (argument.name(), argument.description(), argument.required()))
        .collect();
    assert_eq!(
        arguments,
        [
            ("order_id", Some("The order to review."), true),
            ("focus", Some("What to focus on."), false),
        ]
    );
    assert_eq!(prompt.title(), Some("Review an order"));
}

#[tokio::test]
async fn a_render_returns_its_messages_and_is_recorded() {
    let runtime = runtime();
    let outcome = runtime
        .get_prompt(Request::get_prompt("review_order").argument("order_id", "ord-1"))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    let messages = outcome.result.unwrap();
    assert_eq!(messages.description_of(), Some("A review of ord-1"));
    let roles: Vec<_> = messages.iter().map(Message::role).collect();
    assert_eq!(roles, [Role::User, Role::User, Role::Assistant]);
    assert_eq!(
        messages.iter().next().unwrap().content(),
        &MessageContent::Text("Review order ord-1 for anything unusual.".into())
    );
    let record = runtime.execution(&outcome.execution_id).unwrap();
    assert_eq!(record.kind, ExecutionKind::Prompt);
    assert_eq!(record.target, "review_order");
}

#[tokio::test]
async fn arguments_are_checked_before_the_render_runs() {
    let runtime = runtime();
    let missing = runtime
        .get_prompt(Request::get_prompt("review_order"))
        .await;
    assert_eq!(missing.status, ExecutionStatus::Rejected);
    let error = missing.error().unwrap();
    assert_eq!(error.code(), "INVALID_ARGUMENTS");
    assert!(
        error.message().contains("`order_id`"),
        "{}",
        error.message()
    );
    let unknown = runtime
        .get_prompt(
            Request::get_prompt("review_order")
                .argument("order_id", "ord-1")
                .argument("sneaky", "x"),
        )
        .await;
    assert!(unknown.error().unwrap().message().contains("`sneaky`"));
    let mut not_text = serde_json::Map::new();
    not_text.insert("order_id".into(), serde_json::json!(7));
    let not_text = runtime
        .get_prompt(Request::get_prompt("review_order").arguments(not_text))
        .await;
    assert_eq!(not_text.unwrap_error_code(), "INVALID_ARGUMENTS");
    let nothing = runtime.get_prompt(Request::get_prompt("nope")).await;
    assert_eq!(nothing.kind, OutcomeKind::Unroutable);
    assert_eq!(nothing.unwrap_error_code(), "PROMPT_NOT_FOUND");
}

#[tokio::test]
async fn a_render_that_panics_is_contained() {
    let runtime = runtime();
    let outcome = runtime
        .get_prompt(Request::get_prompt("review_order").argument("order_id", "ord-0"))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Panicked);
    assert_eq!(runtime.running_executions(), 0);
}

#[test]
fn build_refuses_arguments_that_are_not_strings_and_duplicate_names() {
    #[derive(Deserialize, JsonSchema)]
    struct Counted {
        #[allow(dead_code)]
        count: u32,
    }
    struct Numbers;
    impl Prompt for Numbers {
        type Input = Counted;
        type Output = String;
        const SPEC: PromptSpec = PromptSpec::new("numbers");
        async fn render(&self, _: Counted, _: Invocation) -> Result<String, AgentError> {
            Ok(String::new())
        }
    }
    let error = Carmy::new()
        .prompt(ReviewOrder)
        .prompt(ReviewOrder)
        .prompt(Numbers)
        .build()
        .unwrap_err();
    assert!(
        error
            .problems()
            .contains(&BuildProblem::DuplicatePromptName {
                name: "review_order".into()
            })
    );
    assert!(
        error
            .to_string()
            .contains("the field `count` is an argument"),
        "{error}"
    );
}
