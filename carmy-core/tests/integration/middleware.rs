//! Middleware sees every request the runtime serves — tool calls, resource reads, prompt gets,
//! completions — and its answer, in the order it was added, around the runtime's own steps: it
//! can read the caller and the request, bind what it learns of the caller into the context,
//! refuse without running anything, and replace the answer.

use std::sync::{Arc, Mutex};

use carmy_core::{
    AgentError, Answer, Carmy, CompletionRequest, CompletionTarget, Completions, Context,
    ExecutionStatus, Incoming, Invocation, Middleware, Next, Prompt, PromptSpec, Request, Resource,
    ResourceSpec, Runtime, Tool, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// What the middleware saw, in order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Logs each request and its status, under its own name.
struct Audit(&'static str, Seen);

impl Middleware for Audit {
    async fn handle(&self, request: Incoming, next: Next<'_>) -> Answer {
        let (method, target) = (request.method(), request.target().to_owned());
        let who = request.trusted().principal().unwrap_or("-").to_owned();
        let arguments = request.arguments().map(ToString::to_string);
        self.1.push(format!(
            "{} > {method} {target} by {who} {}",
            self.0,
            arguments.unwrap_or_default()
        ));
        let answer = next.run(request).await;
        self.1.push(format!(
            "{} < {method} {target} {}",
            self.0,
            answer.status()
        ));
        answer
    }
}

/// The caller's tenant, which only a middleware sets.
#[derive(Debug, Clone)]
struct Tenant(String);

/// Binds the tenant from the principal (as a token would name it), never from an argument.
struct BindTenant;

impl Middleware for BindTenant {
    async fn handle(&self, request: Incoming, next: Next<'_>) -> Answer {
        let Some(tenant) = request
            .trusted()
            .principal()
            .and_then(|principal| principal.split_once('@'))
            .map(|(_, tenant)| tenant.to_owned())
        else {
            let refusal = AgentError::permission("NO_TENANT", "the caller names no tenant");
            return request.refuse(refusal);
        };
        let request = request.with_context(|context| context.with_extension(Tenant(tenant)));
        next.run(request).await
    }
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// Answers with the tenant its context carries.
struct WhoAmI;

impl Tool for WhoAmI {
    type Input = Nothing;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("who_am_i", carmy_core::Effect::Read);

    async fn run(&self, _: Nothing, invocation: Invocation) -> Result<String, AgentError> {
        let tenant = invocation.context().extension::<Tenant>();
        Ok(tenant.map_or_else(|| "nobody".to_owned(), |tenant| tenant.0.clone()))
    }
}

struct Page;
impl Resource for Page {
    type Input = Nothing;
    type Output = String;
    const SPEC: ResourceSpec = ResourceSpec::new("page", "docs://page");
    async fn read(&self, _: Nothing, _: Invocation) -> Result<String, AgentError> {
        Ok("a page".into())
    }
}

#[derive(Deserialize, JsonSchema)]
struct Topic {
    topic: String,
}

struct Explain;
impl Prompt for Explain {
    type Input = Topic;
    type Output = String;
    const SPEC: PromptSpec = PromptSpec::new("explain");
    const COMPLETES: &'static [&'static str] = &["topic"];

    async fn complete(&self, request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
        Ok(Completions::starting_with(
            request.value(),
            ["orders", "returns"],
        ))
    }

    async fn render(&self, input: Topic, _: Invocation) -> Result<String, AgentError> {
        Ok(format!("Explain {}", input.topic))
    }
}

fn catalog() -> Carmy {
    Carmy::new().tool(WhoAmI).resource(Page).prompt(Explain)
}

fn alice() -> Context {
    Context::new().with_principal("alice@acme")
}

#[tokio::test]
async fn middleware_sees_every_request_outermost_first() {
    let seen = Seen::default();
    let runtime: Runtime = catalog()
        .middleware(Audit("outer", seen.clone()))
        .middleware(Audit("inner", seen.clone()))
        .build()
        .unwrap();
    let call = Request::new("who_am_i", json!({})).context(alice());
    assert!(runtime.execute(call).await.is_ok());
    assert!(runtime.read(Request::read("docs://page")).await.is_ok());
    let get = Request::get_prompt("explain").argument("topic", "orders");
    assert!(runtime.get_prompt(get).await.is_ok());
    let target = CompletionTarget::Prompt("explain".into());
    let completed = runtime
        .complete(Request::complete(target, "topic", "ord"))
        .await;
    assert!(completed.is_ok());

    assert_eq!(
        seen.lines(),
        [
            "outer > tools/call who_am_i by alice@acme {}",
            "inner > tools/call who_am_i by alice@acme {}",
            "inner < tools/call who_am_i succeeded",
            "outer < tools/call who_am_i succeeded",
            "outer > resources/read docs://page by - ",
            "inner > resources/read docs://page by - ",
            "inner < resources/read docs://page succeeded",
            "outer < resources/read docs://page succeeded",
            "outer > prompts/get explain by - ",
            "inner > prompts/get explain by - ",
            "inner < prompts/get explain succeeded",
            "outer < prompts/get explain succeeded",
            "outer > completion/complete explain by - ",
            "inner > completion/complete explain by - ",
            "inner < completion/complete explain succeeded",
            "outer < completion/complete explain succeeded",
        ]
    );
}

#[tokio::test]
async fn a_middleware_binds_the_tenant_from_the_caller_never_from_an_argument() {
    let runtime = catalog().middleware(BindTenant).build().unwrap();
    let call = Request::new("who_am_i", json!({})).context(alice());
    let outcome = runtime.execute(call).await;
    assert_eq!(outcome.unwrap_output::<String>(), "acme");

    // A caller without a tenant is refused before anything runs, and nothing is recorded.
    let refused = runtime
        .execute(Request::new("who_am_i", json!({})).context(Context::new().with_principal("bob")))
        .await;
    assert_eq!(refused.status, ExecutionStatus::Rejected);
    assert_eq!(refused.unwrap_error_code(), "NO_TENANT");
    assert!(runtime.execution(&refused.execution_id).is_none());
    // Reads are held to it too.
    let read = runtime.read(Request::read("docs://page")).await;
    assert_eq!(read.unwrap_error_code(), "NO_TENANT");
}

/// Withholds every prompt's messages.
struct Withhold;

impl Middleware for Withhold {
    async fn handle(&self, request: Incoming, next: Next<'_>) -> Answer {
        let answer = next.run(request).await;
        match answer {
            Answer::GetPrompt(_) => {
                answer.fail(AgentError::permission("WITHHELD", "not for you today"))
            }
            other => other,
        }
    }
}

#[tokio::test]
async fn a_middleware_may_replace_the_answer() {
    let runtime = catalog().middleware(Withhold).build().unwrap();
    let get = Request::get_prompt("explain").argument("topic", "orders");
    let got = runtime.get_prompt(get).await;
    assert_eq!(got.unwrap_error_code(), "WITHHELD");
    assert_eq!(got.status, ExecutionStatus::Failed);
    // The execution ran, and its record says how it ended for the runtime.
    let record = runtime.execution(&got.execution_id).expect("recorded");
    assert_eq!(record.status, ExecutionStatus::Succeeded);
    assert!(
        runtime
            .execute(Request::new("who_am_i", json!({})))
            .await
            .is_ok()
    );
}

/// Answers every request as if it were a read.
struct Confused;

impl Middleware for Confused {
    async fn handle(&self, _: Incoming, next: Next<'_>) -> Answer {
        next.run(Incoming::from(Request::read("docs://page"))).await
    }
}

#[tokio::test]
async fn an_answer_of_another_operation_is_an_internal_error() {
    let runtime = catalog().middleware(Confused).build().unwrap();
    let outcome = runtime.execute(Request::new("who_am_i", json!({}))).await;
    assert_eq!(outcome.unwrap_error_code(), "INTERNAL");
    assert_eq!(outcome.status, ExecutionStatus::Failed);
}
