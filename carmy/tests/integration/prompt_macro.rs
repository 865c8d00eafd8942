//! What `#[prompt]` and `complete(...)` generate, observed at run time: the arguments in the
//! catalog from the input's fields and doc comments, a render through the runtime (arguments
//! checked, messages of every kind returned, state and context injected, errors converted),
//! completion of a prompt's argument and of a resource template's variable (at most 100
//! values, the total, whether there are more), direct calls, and what `build()` checks that the
//! macro cannot.

use std::collections::HashMap;

use carmy::{
    Completions, Content, Message, MessageContent, Messages, Role, Runtime,
    catalog::{BuildProblem, Prompt},
    execution::{
        Body, Complete, CompletionRequest, CompletionTarget, ExecutionKind, ExecutionStatus,
        Request,
    },
    prelude::*,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
struct Review {
    /// The order to review.
    order_id: String,
    /// What to look at first.
    focus: Option<String>,
}

struct Orders {
    ids: Vec<String>,
}

fn orders() -> Orders {
    Orders {
        // 250 orders: more than one completion answer holds.
        ids: (1..=250).map(|n| format!("ord-{n:04}")).collect(),
    }
}

#[derive(Debug)]
enum ShopError {
    NoSuchOrder(String),
}

impl From<ShopError> for AgentError {
    fn from(error: ShopError) -> Self {
        match error {
            ShopError::NoSuchOrder(id) => {
                AgentError::not_found("ORDER_NOT_FOUND", format!("no order {id}"))
            }
        }
    }
}

/// The order ids that start with what the user typed.
async fn order_ids(request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
    let orders = request
        .context()
        .principal()
        .map_or(&["ord-0001"][..], |_| {
            &["ord-0001", "ord-0002", "ord-0100"][..]
        });
    Ok(Completions::starting_with(
        request.value(),
        orders.iter().copied(),
    ))
}

/// Kept as they are, most likely first.
async fn focuses(_typed: &str) -> Result<Vec<String>, AgentError> {
    Ok(vec!["shipping".into(), "billing".into()])
}

/// Review an order.
///
/// Asks the model to look at one order.
#[prompt(
    name = "orders.review",
    title = "Review an order",
    complete(order_id = order_ids, focus = focuses)
)]
async fn review_order(
    input: Review,
    ctx: &Context,
    orders: State<Orders>,
) -> Result<Messages, ShopError> {
    if !orders.ids.contains(&input.order_id) {
        return Err(ShopError::NoSuchOrder(input.order_id));
    }
    let focus = input.focus.unwrap_or_else(|| "anything unusual".into());
    let reviewer = ctx.principal().unwrap_or("someone");
    Ok(Messages::new()
        .with(Message::user(format!(
            "Review order {} for {focus}, as {reviewer}.",
            input.order_id
        )))
        .with(Message::assistant("Looking at it."))
        .with(Message::image(Role::User, vec![0x89, b'P'], "image/png"))
        .with(Message::resource(
            Role::User,
            Content::text("Within 30 days.").uri("shop://policies/returns"),
        )))
}

/// One user message.
#[prompt]
async fn greet() -> Result<String, AgentError> {
    Ok("Say hello.".into())
}

#[derive(Debug, Deserialize, JsonSchema)]
struct OrderRef {
    id: String,
}

/// Every order id there is: more than one answer holds.
async fn every_order_id(typed: &str) -> Result<Completions, AgentError> {
    // A completer has no state of its own: it builds what it needs.
    let orders = orders();
    Ok(Completions::starting_with(
        typed,
        orders.ids.iter().map(String::as_str),
    ))
}

/// One order.
#[resource(uri = "shop://orders/{id}", complete(id = every_order_id))]
async fn order(input: OrderRef) -> Result<String, AgentError> {
    Ok(input.id)
}

fn runtime() -> Runtime {
    Carmy::new()
        .prompt(review_order)
        .prompt(greet)
        .resource(order)
        .state(orders())
        .build()
        .expect("valid catalog")
}

fn complete_prompt(argument: &str, typed: &str) -> Request<Complete> {
    Request::complete(
        CompletionTarget::Prompt("orders.review".into()),
        argument,
        typed,
    )
}

#[test]
fn arguments_come_from_the_inputs_fields_and_their_docs() {
    let runtime = runtime();
    let prompt = runtime.catalog().prompt("orders.review").unwrap();
    assert_eq!(prompt.title(), Some("Review an order"));
    assert_eq!(
        prompt.description(),
        "Review an order.\n\nAsks the model to look at one order."
    );
    let arguments: Vec<_> = prompt
        .arguments()
        .iter()
        .map(|argument| (argument.name(), argument.description(), argument.required()))
        .collect();
    assert_eq!(
        arguments,
        [
            ("order_id", Some("The order to review."), true),
            ("focus", Some("What to look at first."), false),
        ]
    );
    assert_eq!(prompt.completes(), ["order_id", "focus"]);

    let greeting = runtime.catalog().prompt("greet").unwrap();
    assert!(greeting.arguments().is_empty());
    assert!(greeting.completes().is_empty());
    assert_eq!(
        <greet as Prompt>::SPEC.description_text(),
        "One user message."
    );
}

#[tokio::test]
async fn a_render_returns_the_messages_with_state_and_context() {
    let outcome = runtime()
        .get_prompt(
            Request::get_prompt("orders.review")
                .argument("order_id", "ord-0007")
                .context(Context::new().with_principal("alice")),
        )
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    let messages = outcome.result.unwrap();
    let rendered: Vec<_> = messages
        .iter()
        .map(|message| (message.role(), message.content().clone()))
        .collect();
    assert_eq!(
        rendered,
        [
            (
                Role::User,
                MessageContent::Text(
                    "Review order ord-0007 for anything unusual, as alice.".into()
                )
            ),
            (
                Role::Assistant,
                MessageContent::Text("Looking at it.".into())
            ),
            (
                Role::User,
                MessageContent::Image {
                    data: vec![0x89, b'P'],
                    mime_type: "image/png".into()
                }
            ),
            (
                Role::User,
                MessageContent::Resource(
                    Content::text("Within 30 days.").uri("shop://policies/returns")
                )
            ),
        ]
    );
    let MessageContent::Resource(embedded) = messages.iter().last().unwrap().content() else {
        unreachable!()
    };
    assert_eq!(embedded.body(), &Body::Text("Within 30 days.".into()));

    // A `String` is one user message.
    let greeting = runtime().get_prompt(Request::get_prompt("greet")).await;
    let greeting = greeting.result.unwrap();
    assert_eq!(greeting.len(), 1);
    let only = greeting.iter().next().unwrap();
    assert_eq!(only.role(), Role::User);
    assert_eq!(only.content(), &MessageContent::Text("Say hello.".into()));
}

#[tokio::test]
async fn a_missing_required_argument_is_named_and_the_function_never_runs() {
    let runtime = runtime();
    let outcome = runtime
        .get_prompt(Request::get_prompt("orders.review").argument("focus", "billing"))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Rejected);
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), carmy::codes::INVALID_ARGUMENTS);
    assert!(
        error.message().contains("`order_id`"),
        "{}",
        error.message()
    );

    let unknown = runtime
        .get_prompt(
            Request::get_prompt("orders.review")
                .argument("order_id", "ord-0001")
                .argument("tone", "curt"),
        )
        .await;
    assert!(
        unknown.error().unwrap().message().contains("`tone`"),
        "{:?}",
        unknown.error()
    );
}

#[tokio::test]
async fn errors_convert_into_agent_errors() {
    let outcome = runtime()
        .get_prompt(Request::get_prompt("orders.review").argument("order_id", "ord-9999"))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Failed);
    assert_eq!(outcome.unwrap_error_code(), "ORDER_NOT_FOUND");
    assert_eq!(outcome.error().unwrap().message(), "no order ord-9999");
}

#[tokio::test]
async fn a_prompt_argument_completes_through_its_completer() {
    let runtime = runtime();
    // The completer takes the whole request: the context reaches it.
    let anonymous = runtime.complete(complete_prompt("order_id", "ORD")).await;
    assert_eq!(anonymous.status, ExecutionStatus::Succeeded);
    assert_eq!(anonymous.result.unwrap().values(), ["ord-0001"]);
    let alice = runtime
        .complete(
            complete_prompt("order_id", "ord-00").context(Context::new().with_principal("alice")),
        )
        .await;
    let alice = alice.result.unwrap();
    assert_eq!(alice.values(), ["ord-0001", "ord-0002"]);
    assert_eq!((alice.total(), alice.has_more()), (2, false));

    // `Vec<String>` is kept as it is; each argument has its own completer.
    let focus = runtime
        .complete(complete_prompt("focus", "x").arguments(HashMap::from([(
            "order_id".to_owned(),
            "ord-0001".to_owned(),
        )])))
        .await;
    assert_eq!(focus.result.unwrap().values(), ["shipping", "billing"]);
    let record = runtime.execution(&focus.execution_id).unwrap();
    assert_eq!(record.kind, ExecutionKind::Complete);
    assert_eq!(record.target, "orders.review");

    let unknown = runtime.complete(complete_prompt("tone", "")).await;
    assert_eq!(unknown.unwrap_error_code(), carmy::codes::INVALID_ARGUMENTS);
}

#[tokio::test]
async fn a_template_variable_completes_at_most_a_hundred_values() {
    let outcome = runtime()
        .complete(Request::complete(
            CompletionTarget::Resource("shop://orders/{id}".into()),
            "id",
            "ord-",
        ))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    let completions = outcome.result.unwrap();
    assert_eq!(
        completions.values().len(),
        carmy::execution::MAX_COMPLETIONS
    );
    assert_eq!(completions.values()[0], "ord-0001");
    assert_eq!(completions.total(), 250);
    assert!(completions.has_more());

    let narrow = runtime()
        .complete(Request::complete(
            CompletionTarget::Resource("shop://orders/{id}".into()),
            "id",
            "ord-024",
        ))
        .await
        .result
        .unwrap();
    assert_eq!(narrow.values().len(), 10);
    assert_eq!((narrow.total(), narrow.has_more()), (10, false));
}

#[test]
fn build_refuses_a_completed_argument_that_is_no_field() {
    #[derive(Deserialize, JsonSchema)]
    struct Greeting {
        name: String,
    }

    async fn names(typed: &str) -> Result<Completions, AgentError> {
        Ok(Completions::starting_with(typed, ["Ada"]))
    }

    /// `nickname` is not a field of `Greeting`: the macro cannot know, `build()` does.
    #[prompt(complete(nickname = names))]
    async fn hello(input: Greeting) -> Result<String, AgentError> {
        Ok(format!("Say hello to {}.", input.name))
    }

    let error = Carmy::new().prompt(hello).build().unwrap_err();
    let problems: Vec<_> = error
        .problems()
        .iter()
        .map(|problem| match problem {
            BuildProblem::InvalidPrompt { prompt, reason } => (prompt.as_str(), reason.as_str()),
            other => panic!("unexpected problem: {other}"),
        })
        .collect();
    assert_eq!(
        problems,
        [(
            "hello",
            "it completes `nickname`, which is not one of its arguments"
        )]
    );
}

#[test]
fn a_missing_state_is_reported_at_build() {
    let error = Carmy::new().prompt(review_order).build().unwrap_err();
    assert!(
        matches!(
            error.problems(),
            [BuildProblem::MissingState { type_name, prompts, .. }]
                if prompts == &["orders.review"] && type_name.ends_with("Orders")
        ),
        "{error}"
    );
}

#[tokio::test]
async fn prompts_and_completers_can_be_called_directly() {
    let ctx = Context::new();
    let messages = review_order(
        Review {
            order_id: "ord-0001".into(),
            focus: Some("billing".into()),
        },
        &ctx,
        State::new(orders()),
    )
    .await
    .unwrap();
    assert_eq!(messages.len(), 4);
    assert!(matches!(
        review_order::call(
            Review { order_id: "x".into(), focus: None },
            &ctx,
            State::new(orders()),
        )
        .await,
        Err(ShopError::NoSuchOrder(id)) if id == "x"
    ));
    assert_eq!(greet().await.unwrap(), "Say hello.");
    assert_eq!(
        every_order_id("ord-0250").await.unwrap().values(),
        ["ord-0250"]
    );
}
