//! Access rules: a call of a tool the context's rules leave out is refused with
//! `TOOL_NOT_ALLOWED` before anything else is looked at, recorded, and never runs, and a caller
//! so restricted gets the same answer for a tool that does not exist; so are reads of resources
//! and renders of prompts (`RESOURCE_NOT_ALLOWED`, `PROMPT_NOT_ALLOWED`), and their
//! completions.

use crate::common;

use carmy_core::{Access, Context, ExecutionStatus, Request};
use common::Shop;
use serde_json::json;

fn order(tool: &str, context: Context) -> Request {
    Request::new(tool, json!({ "order_id": "ord-1" })).context(context)
}

fn reader() -> Context {
    Context::new()
        .with_principal("auditor")
        .with_access("effect:read".parse().unwrap())
}

#[tokio::test]
async fn a_tool_outside_the_rules_is_refused_recorded_and_never_runs() {
    let shop = Shop::new();
    let runtime = shop.carmy().build().unwrap();
    let refused = runtime.execute(order("place_order", reader())).await;
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    let error = refused.error().unwrap();
    assert_eq!(error.code(), "TOOL_NOT_ALLOWED");
    assert_eq!(error.category(), carmy_core::ErrorCategory::Permission);
    assert_eq!(error.details().unwrap()["tool"], "place_order");
    assert_eq!(shop.places.started(), 0);
    let record = runtime.execution(&refused.execution_id).expect("recorded");
    assert_eq!(record.error_code.as_deref(), Some("TOOL_NOT_ALLOWED"));

    // Refused before its arguments are read: nothing about the tool's input leaks.
    let bad = Request::new("place_order", json!({ "nope": 1 })).context(reader());
    assert_eq!(
        runtime.execute(bad).await.unwrap_error_code(),
        "TOOL_NOT_ALLOWED"
    );

    // What the rules allow runs as before.
    let read = runtime.execute(order("get_order", reader())).await;
    assert_eq!(read.status, ExecutionStatus::Succeeded);
    assert_eq!(shop.gets.started(), 1);
}

#[tokio::test]
async fn restrictions_add_up_and_a_later_one_never_widens() {
    let shop = Shop::new();
    let runtime = shop.carmy().build().unwrap();
    let server: Access = "*_order".parse().unwrap();
    let token: Access = "get_order, effect:write".parse().unwrap();
    let context = Context::new().with_access(server).with_access(token);
    assert!(
        runtime
            .execute(order("get_order", context.clone()))
            .await
            .is_ok()
    );
    assert!(
        runtime
            .execute(order("place_order", context.clone()))
            .await
            .is_ok()
    );
    // Allowed by the server's pattern, but not by the token's list.
    let cancel = order(
        "cancel_order",
        context.clone().with_grant("confirm:cancel_order"),
    );
    assert_eq!(
        runtime.execute(cancel).await.unwrap_error_code(),
        "TOOL_NOT_ALLOWED"
    );

    let catalog = runtime.catalog();
    let visible: Vec<&str> = catalog
        .iter()
        .filter(|tool| context.allows_tool(tool))
        .map(|tool| tool.name())
        .collect();
    assert_eq!(visible, ["place_order", "get_order"]);
    assert!(context.is_restricted() && !Context::new().is_restricted());
}

#[tokio::test]
async fn a_caller_held_to_some_tools_gets_one_answer_for_a_hidden_tool_and_a_missing_one() {
    let runtime = Shop::new().carmy().build().unwrap();
    let hidden = runtime.execute(order("place_order", reader())).await;
    let missing = runtime.execute(order("plaice_order", reader())).await;
    // The same answer, but for the name each echoes: whether a tool it may not call exists is
    // none of this caller's business.
    assert_eq!(
        (hidden.status, &hidden.kind),
        (missing.status, &missing.kind)
    );
    let answer = serde_json::to_value(missing.error().unwrap())
        .unwrap()
        .to_string()
        .replace("plaice_order", "place_order");
    assert_eq!(
        answer,
        serde_json::to_value(hidden.error().unwrap())
            .unwrap()
            .to_string()
    );
    assert_eq!(missing.unwrap_error_code(), "TOOL_NOT_ALLOWED");
}

#[tokio::test]
async fn an_unknown_tool_is_not_found_by_a_caller_not_held_to_some_tools() {
    let runtime = Shop::new().carmy().build().unwrap();
    let docs = Context::new().with_access("resource:docs://*".parse().unwrap());
    for context in [Context::new(), docs] {
        let outcome = runtime.execute(order("nope", context)).await;
        assert_eq!(outcome.unwrap_error_code(), "TOOL_NOT_FOUND");
        assert_eq!(outcome.kind, carmy_core::OutcomeKind::Unroutable);
    }
}

mod resources_and_prompts {
    use carmy_core::{
        AgentError, Carmy, CompletionRequest, CompletionTarget, Completions, Content, Context,
        ExecutionStatus, Invocation, Message, Messages, Prompt, PromptSpec, Request, Resource,
        ResourceSpec, Role, Runtime,
    };
    use schemars::JsonSchema;
    use serde::Deserialize;
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    /// How many times a resource was read, or a prompt rendered.
    #[derive(Clone, Default)]
    struct Runs(Arc<AtomicUsize>);

    impl Runs {
        fn count(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }

        fn one(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[derive(Deserialize, JsonSchema)]
    struct OrderRef {
        id: String,
    }

    struct Order(Runs);
    impl Resource for Order {
        type Input = OrderRef;
        type Output = String;
        const SPEC: ResourceSpec = ResourceSpec::new("order", "shop://orders/{id}");
        async fn read(&self, input: OrderRef, _: Invocation) -> Result<String, AgentError> {
            self.0.one();
            Ok(input.id)
        }
    }

    #[derive(Deserialize, JsonSchema)]
    struct Nothing {}

    struct Policy;
    impl Resource for Policy {
        type Input = Nothing;
        type Output = String;
        const SPEC: ResourceSpec = ResourceSpec::new("returns", "docs://policies/returns");
        async fn read(&self, _: Nothing, _: Invocation) -> Result<String, AgentError> {
            Ok("30 days".into())
        }
    }

    struct Greeting(Runs);
    impl Prompt for Greeting {
        type Input = Nothing;
        type Output = String;
        const SPEC: PromptSpec = PromptSpec::new("support_greeting");
        async fn render(&self, _: Nothing, _: Invocation) -> Result<String, AgentError> {
            self.0.one();
            Ok("Hello".into())
        }
    }

    struct Pitch(Runs);
    impl Prompt for Pitch {
        type Input = Nothing;
        type Output = String;
        const SPEC: PromptSpec = PromptSpec::new("sales_pitch");
        async fn render(&self, _: Nothing, _: Invocation) -> Result<String, AgentError> {
            self.0.one();
            Ok("Buy".into())
        }
    }

    #[derive(Deserialize, JsonSchema)]
    struct AboutOrder {
        id: String,
    }

    /// Embeds the order it is asked about, as a resource of its URI (or of none, for `-`), and
    /// completes the ids of orders `1`, `10`, `11` and `20`.
    struct OrderHelp;
    impl Prompt for OrderHelp {
        type Input = AboutOrder;
        type Output = Messages;
        const SPEC: PromptSpec = PromptSpec::new("order_help");
        const COMPLETES: &'static [&'static str] = &["id"];

        async fn complete(
            &self,
            request: CompletionRequest<'_>,
        ) -> Result<Completions, AgentError> {
            let ids = ["1", "10", "11", "20"];
            Ok(Completions::starting_with(request.value(), ids).naming("shop://orders/{id}"))
        }

        async fn render(&self, input: AboutOrder, _: Invocation) -> Result<Messages, AgentError> {
            let order = Content::text(format!("order {}: 2 mice, to 12 Rue Oberkampf", input.id));
            let order = match input.id.as_str() {
                "-" => order,
                id => order.uri(format!("shop://orders/{id}")),
            };
            Ok(Messages::new()
                .with(Message::resource(Role::User, order))
                .with(Message::user("Help the customer with this order.")))
        }
    }

    /// The catalog, and the runs of its order resource and of its prompts.
    fn runtime() -> (Runtime, Runs, Runs) {
        let (reads, renders) = (Runs::default(), Runs::default());
        let runtime = Carmy::new()
            .resource(Order(reads.clone()))
            .resource(Policy)
            .prompt(Greeting(renders.clone()))
            .prompt(Pitch(renders.clone()))
            .prompt(OrderHelp)
            .build()
            .expect("catalog");
        (runtime, reads, renders)
    }

    /// A caller that may get every prompt and read only `resources`.
    fn reading(resources: &str) -> Context {
        Context::new().with_access(resources.parse().unwrap())
    }

    #[tokio::test]
    async fn a_prompt_may_not_embed_what_its_caller_may_not_read() {
        let (runtime, _, _) = runtime();
        let get = |id: &str, context: Context| {
            Request::get_prompt("order_help")
                .argument("id", id)
                .context(context)
        };
        let refused = runtime
            .get_prompt(get("7", reading("resource:docs://*")))
            .await;
        assert_eq!(refused.status, ExecutionStatus::Failed);
        let error = refused.error().unwrap();
        assert_eq!(error.code(), "RESOURCE_NOT_ALLOWED");
        assert_eq!(error.details().unwrap()["uri"], "shop://orders/7");
        assert!(
            !format!("{error:?}").contains("Oberkampf"),
            "the refusal shows the order: {error:?}"
        );
        // An embedded resource that does not say its URI cannot be shown to be readable.
        let unnamed = runtime
            .get_prompt(get("-", reading("resource:docs://*")))
            .await;
        assert_eq!(unnamed.unwrap_error_code(), "RESOURCE_NOT_ALLOWED");
        // Whoever may read it gets it embedded, as does a caller its rules leave resources to.
        for context in [reading("resource:shop://orders/*"), reading("effect:read")] {
            let rendered = runtime.get_prompt(get("7", context)).await;
            assert_eq!(rendered.status, ExecutionStatus::Succeeded);
            assert_eq!(rendered.result.unwrap().len(), 2);
        }
    }

    #[tokio::test]
    async fn a_completion_suggests_only_what_its_caller_may_read() {
        let (runtime, _, _) = runtime();
        let complete = |context: Context| {
            let request =
                Request::complete(CompletionTarget::Prompt("order_help".into()), "id", "1")
                    .context(context);
            let runtime = runtime.clone();
            async move { runtime.complete(request).await.result.unwrap() }
        };
        let none = complete(reading("resource:docs://*")).await;
        assert_eq!((none.values().len(), none.total()), (0, 0));
        let some = complete(reading(
            "resource:shop://orders/10, resource:shop://orders/11, resource:docs://*",
        ))
        .await;
        assert_eq!(some.values(), ["10", "11"]);
        assert_eq!((some.total(), some.has_more()), (2, false));
        let all = complete(reading("effect:read")).await;
        assert_eq!(all.values(), ["1", "10", "11"]);
    }

    fn support() -> Context {
        Context::new()
            .with_principal("support")
            .with_access("resource:docs://*, prompt:support_*".parse().unwrap())
    }

    #[tokio::test]
    async fn reads_and_renders_outside_the_rules_are_refused_recorded_and_never_run() {
        let (runtime, reads, renders) = runtime();
        let read = |uri: &str, context: Context| Request::read(uri).context(context);
        let refused = runtime.read(read("shop://orders/1", support())).await;
        assert_eq!(refused.status, ExecutionStatus::Rejected);
        let error = refused.error().unwrap();
        assert_eq!(error.code(), "RESOURCE_NOT_ALLOWED");
        assert_eq!(error.category(), carmy_core::ErrorCategory::Permission);
        assert_eq!(error.details().unwrap()["uri"], "shop://orders/1");
        assert_eq!(reads.count(), 0);
        let record = runtime.execution(&refused.execution_id).expect("recorded");
        assert_eq!(record.error_code.as_deref(), Some("RESOURCE_NOT_ALLOWED"));
        // Whether a URI exists is not told: one that names nothing is refused the same way.
        assert_eq!(
            runtime
                .read(read("shop://nothing", support()))
                .await
                .unwrap_error_code(),
            "RESOURCE_NOT_ALLOWED"
        );
        let allowed = runtime
            .read(read("docs://policies/returns", support()))
            .await;
        assert_eq!(allowed.status, ExecutionStatus::Succeeded);

        let render = |name: &str| Request::get_prompt(name).context(support());
        let refused = runtime.get_prompt(render("sales_pitch")).await;
        assert_eq!(refused.unwrap_error_code(), "PROMPT_NOT_ALLOWED");
        assert_eq!(renders.count(), 0);
        let allowed = runtime.get_prompt(render("support_greeting")).await;
        assert_eq!(allowed.status, ExecutionStatus::Succeeded);
        assert_eq!(renders.count(), 1);

        // Nor are their arguments completed for this caller.
        let complete = |target| Request::complete(target, "id", "ord").context(support());
        let refused = runtime
            .complete(complete(CompletionTarget::Resource(
                "shop://orders/{id}".into(),
            )))
            .await;
        assert_eq!(refused.unwrap_error_code(), "RESOURCE_NOT_ALLOWED");
        let refused = runtime
            .complete(complete(CompletionTarget::Prompt("sales_pitch".into())))
            .await;
        assert_eq!(refused.unwrap_error_code(), "PROMPT_NOT_ALLOWED");
    }

    #[tokio::test]
    async fn tool_rules_leave_resources_and_prompts_alone() {
        let (runtime, reads, renders) = runtime();
        let reader = Context::new().with_access("effect:read".parse().unwrap());
        assert!(reader.restricts_tools() && !reader.restricts_resources());
        let read = runtime
            .read(Request::read("shop://orders/7").context(reader.clone()))
            .await;
        assert_eq!(read.status, ExecutionStatus::Succeeded);
        let rendered = runtime
            .get_prompt(Request::get_prompt("sales_pitch").context(reader))
            .await;
        assert_eq!(rendered.status, ExecutionStatus::Succeeded);
        assert_eq!((reads.count(), renders.count()), (1, 1));
    }
}

#[tokio::test]
async fn required_confirmation_holds_matching_tools_to_a_grant() {
    let shop = Shop::new();
    let runtime = shop
        .carmy()
        .require_confirmation("place_order".parse().unwrap())
        .build()
        .unwrap();
    let entry = runtime.catalog().get("place_order").unwrap();
    assert_eq!(entry.confirmation(), carmy_core::Confirmation::Required);
    let refused = runtime.execute(order("place_order", Context::new())).await;
    assert_eq!(refused.unwrap_error_code(), "CONFIRMATION_REQUIRED");
    assert_eq!(shop.places.started(), 0);
    let granted = Context::new().with_grant("confirm:place_order");
    let placed = runtime.execute(order("place_order", granted)).await;
    assert_eq!(placed.status, ExecutionStatus::Succeeded);
    // Tools it does not match keep what they declare.
    let read = runtime.execute(order("get_order", Context::new())).await;
    assert_eq!(read.status, ExecutionStatus::Succeeded);
}
