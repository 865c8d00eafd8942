//! Resources, read through the runtime: resolution by fixed URI or template, variables checked
//! against the input, the guard (deadline, cancellation, panics), the record, and what
//! `build()` refuses.

use std::time::Duration;

use carmy_core::{
    AgentError, Body, BuildProblem, Carmy, Content, Contents, ExecutionKind, ExecutionStatus,
    Invocation, Limits, NoInput, OutcomeKind, Request, Resource, ResourceSpec, Runtime,
};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

struct Returns;
impl Resource for Returns {
    type Input = NoInput;
    type Output = String;
    const SPEC: ResourceSpec =
        ResourceSpec::new("returns", "shop://policies/returns").mime_type("text/markdown");
    async fn read(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok("Within 30 days.".into())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ProductRef {
    /// `sku-` and three digits.
    #[schemars(regex(pattern = r"^sku-[0-9]{3}$"))]
    id: String,
}

struct Product;
impl Resource for Product {
    type Input = ProductRef;
    type Output = Contents;
    const SPEC: ResourceSpec = ResourceSpec::new("product", "shop://products/{id}");
    async fn read(&self, input: ProductRef, _: Invocation) -> Result<Contents, AgentError> {
        if input.id == "sku-999" {
            return Err(AgentError::not_found(
                "PRODUCT_NOT_FOUND",
                "no such product",
            ));
        }
        Ok([
            Content::json(&serde_json::json!({ "id": input.id }))?,
            Content::blob(vec![0xff, 0x00]).uri(format!("shop://products/{}/photo", input.id)),
        ]
        .into_iter()
        .collect())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Mode {
    mode: String,
}

/// Misbehaves as its URI says.
struct Faulty;
impl Resource for Faulty {
    type Input = Mode;
    type Output = String;
    const SPEC: ResourceSpec =
        ResourceSpec::new("faulty", "test://faulty/{mode}").timeout(Duration::from_millis(50));
    async fn read(&self, input: Mode, invocation: Invocation) -> Result<String, AgentError> {
        match input.mode.as_str() {
            "panic" => panic!("a bug in the resource"),
            "hang" => std::future::pending().await,
            "wait" => {
                invocation.context().cancelled().await;
                Err(AgentError::internal("stopped"))
            }
            other => Ok(other.to_owned()),
        }
    }
}

fn runtime() -> Runtime {
    Carmy::new()
        .resource(Returns)
        .resource(Product)
        .resource(Faulty)
        .build()
        .expect("valid catalog")
}

fn texts(contents: &Contents) -> Vec<&Body> {
    contents.iter().map(Content::body).collect()
}

#[tokio::test]
async fn a_fixed_uri_reads_its_resource() {
    let runtime = runtime();
    let outcome = runtime.read(Request::read("shop://policies/returns")).await;
    assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    let contents = outcome.result.unwrap();
    assert_eq!(texts(&contents), [&Body::Text("Within 30 days.".into())]);
    let record = runtime.execution(&outcome.execution_id).unwrap();
    assert_eq!(record.kind, ExecutionKind::Read);
    assert_eq!(record.target, "returns");
}

#[tokio::test]
async fn a_template_binds_its_variables_to_the_input() {
    let runtime = runtime();
    let outcome = runtime.read(Request::read("shop://products/sku-001")).await;
    let contents = outcome.result.unwrap();
    assert_eq!(contents.len(), 2);
    let first = contents.iter().next().unwrap();
    assert_eq!(first.body(), &Body::Text(r#"{"id":"sku-001"}"#.into()));
    assert_eq!(first.mime_type_of(), Some("application/json"));
    let photo = contents.iter().nth(1).unwrap();
    assert_eq!(photo.uri_of(), Some("shop://products/sku-001/photo"));
    assert_eq!(photo.body(), &Body::Blob(vec![0xff, 0x00]));
    // The resource's own error is a result, recorded as failed.
    let missing = runtime.read(Request::read("shop://products/sku-999")).await;
    assert_eq!(missing.status, ExecutionStatus::Failed);
    assert_eq!(missing.kind, OutcomeKind::Result);
    assert_eq!(missing.unwrap_error_code(), "PRODUCT_NOT_FOUND");
}

#[tokio::test]
async fn variables_that_break_the_input_schema_never_reach_the_resource() {
    let runtime = runtime();
    for uri in ["shop://products/sku-1", "shop://products/..%2F..%2Fetc"] {
        let outcome = runtime.read(Request::read(uri)).await;
        assert_eq!(outcome.status, ExecutionStatus::Rejected, "{uri}");
        assert_eq!(outcome.unwrap_error_code(), "INVALID_ARGUMENTS", "{uri}");
    }
}

#[tokio::test]
async fn a_uri_that_names_nothing_is_unroutable_and_kept_short() {
    let runtime = runtime();
    let outcome = runtime.read(Request::read("shop://nothing/here")).await;
    assert_eq!(outcome.kind, OutcomeKind::Unroutable);
    assert_eq!(outcome.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    let huge = format!("shop://products/{}", "a".repeat(1 << 20));
    let outcome = runtime.read(Request::read(huge)).await;
    assert_eq!(outcome.unwrap_error_code(), "RESOURCE_NOT_FOUND");
    let error = outcome.error().unwrap();
    assert!(error.message().len() < 1_000, "{}", error.message().len());
    let record = runtime.execution(&outcome.execution_id).unwrap();
    assert!(record.target.len() < 200, "{}", record.target.len());
}

#[tokio::test]
async fn reads_run_under_the_guard() {
    let runtime = runtime();
    let read = |mode: &str| runtime.read(Request::read(format!("test://faulty/{mode}")));
    let panicked = read("panic").await;
    assert_eq!(panicked.status, ExecutionStatus::Panicked);
    let hung = read("hang").await;
    assert_eq!(hung.status, ExecutionStatus::TimedOut);
    assert_eq!(hung.unwrap_error_code(), "TIMEOUT");
    let token = CancellationToken::new();
    let waiting = runtime.read(Request::read("test://faulty/wait").cancellation(token.clone()));
    let (cancelled, ()) = tokio::join!(waiting, async { token.cancel() });
    assert_eq!(cancelled.status, ExecutionStatus::Cancelled);
    assert_eq!(runtime.running_executions(), 0);
    assert_eq!(read("fine").await.status, ExecutionStatus::Succeeded);
}

#[tokio::test]
async fn reads_share_the_capacity_with_calls() {
    let runtime = Carmy::new()
        .resource(Faulty)
        .limits(Limits::default().with_max_concurrent_executions(1))
        .build()
        .unwrap();
    let token = CancellationToken::new();
    let busy = tokio::spawn({
        let runtime = runtime.clone();
        let token = token.clone();
        async move {
            runtime
                .read(Request::read("test://faulty/wait").cancellation(token))
                .await
        }
    });
    while runtime.running_executions() == 0 {
        tokio::task::yield_now().await;
    }
    let refused = runtime.read(Request::read("test://faulty/fine")).await;
    assert_eq!(refused.unwrap_error_code(), "CAPACITY");
    token.cancel();
    assert_eq!(busy.await.unwrap().status, ExecutionStatus::Cancelled);
}

#[test]
fn build_refuses_resources_that_cannot_work() {
    #[derive(Deserialize, JsonSchema)]
    struct Numbered {
        #[allow(dead_code)]
        n: u32,
    }
    macro_rules! resource {
        ($name:ident, $input:ty, $spec:expr) => {
            struct $name;
            impl Resource for $name {
                type Input = $input;
                type Output = String;
                const SPEC: ResourceSpec = $spec;
                async fn read(&self, _: $input, _: Invocation) -> Result<String, AgentError> {
                    Ok(String::new())
                }
            }
        };
    }
    resource!(
        Unknown,
        ProductRef,
        ResourceSpec::new("unknown", "shop://p/{sku}")
    );
    resource!(
        Unbound,
        ProductRef,
        ResourceSpec::new("unbound", "shop://p")
    );
    resource!(
        NotText,
        Numbered,
        ResourceSpec::new("not_text", "shop://n/{n}")
    );
    resource!(
        Operator,
        NoInput,
        ResourceSpec::new("operator", "shop://{+path}")
    );
    resource!(
        Again,
        NoInput,
        ResourceSpec::new("returns", "shop://policies/returns")
    );
    let error = Carmy::new()
        .resource(Returns)
        .resource(Unknown)
        .resource(Unbound)
        .resource(NotText)
        .resource(Operator)
        .resource(Again)
        .build()
        .unwrap_err();
    let problems = error.to_string();
    for expected in [
        "`{sku}` in `shop://p/{sku}` is not a field of the resource's input",
        "the input's required field `id` is not a variable of `shop://p`",
        "the field `n` is bound from the URI, so it must be a string",
        "uses the operator `+`",
        "two resources are named `returns`",
        "two resources are at `shop://policies/returns`",
    ] {
        assert!(
            problems.contains(expected),
            "{expected}\nnot in: {problems}"
        );
    }
    assert!(
        error
            .problems()
            .iter()
            .any(|problem| matches!(problem, BuildProblem::InvalidResource { resource, .. } if resource == "operator"))
    );
}
