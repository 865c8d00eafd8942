//! The bound on a result's size (`Limits::max_result_bytes`): a tool's output as JSON, a read's
//! contents, a prompt's messages and a completion's values past it are dropped, and the
//! execution fails with `OUTPUT_TOO_LARGE` (not retryable); what a request id records is that
//! error, so a retry replays it and never runs the tool again.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use carmy_core::{
    AgentError, Carmy, CompletionRequest, CompletionTarget, Completions, Content, Contents,
    Context, Effect, ErrorCategory, ExecutionStatus, Invocation, Limits, Message, Messages, Prompt,
    PromptSpec, Request, Resource, ResourceSpec, Runtime, Tool, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// The bound every test here runs under.
const MAX: usize = 1024;

#[derive(Deserialize, JsonSchema)]
struct Size {
    /// How many bytes of text to return.
    bytes: usize,
}

#[derive(Deserialize, JsonSchema)]
struct SizeText {
    /// How many bytes of text to return.
    bytes: String,
}

impl SizeText {
    fn bytes(&self) -> usize {
        self.bytes.parse().expect("a number")
    }
}

/// Returns `bytes` letters: as JSON, a string of `bytes + 2`.
struct Echo(Arc<AtomicUsize>);
impl Tool for Echo {
    type Input = Size;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("echo", Effect::Write);
    async fn run(&self, input: Size, _: Invocation) -> Result<String, AgentError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok("a".repeat(input.bytes))
    }
}

/// Writes a record, then returns `bytes` letters.
struct Save;
impl Tool for Save {
    type Input = Size;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("save", Effect::Write).transactional(true);
    async fn run(&self, input: Size, invocation: Invocation) -> Result<String, AgentError> {
        invocation
            .context()
            .records()
            .put("saved", "last", &input.bytes)?;
        Ok("a".repeat(input.bytes))
    }
}

/// Reads what was saved (0: nothing).
struct Saved;
impl Tool for Saved {
    type Input = carmy_core::NoInput;
    type Output = usize;
    const SPEC: ToolSpec = ToolSpec::new("saved", Effect::Read);
    async fn run(
        &self,
        _: carmy_core::NoInput,
        invocation: Invocation,
    ) -> Result<usize, AgentError> {
        let saved = invocation.context().records().get("saved", "last").await?;
        Ok(saved.unwrap_or(0))
    }
}

/// A text and as many bytes: half the size as base64 is the other half.
struct Page;
impl Resource for Page {
    type Input = SizeText;
    type Output = Contents;
    const SPEC: ResourceSpec = ResourceSpec::new("page", "test://pages/{bytes}");
    async fn read(&self, input: SizeText, _: Invocation) -> Result<Contents, AgentError> {
        let half = input.bytes() / 2;
        Ok([
            Content::text("a".repeat(half)),
            Content::blob(vec![0; half]),
        ]
        .into_iter()
        .collect())
    }
}

/// `bytes` letters as a message, and suggestions of `bytes` letters each.
struct Letter;
impl Prompt for Letter {
    type Input = SizeText;
    type Output = Messages;
    const SPEC: PromptSpec = PromptSpec::new("letter");
    const COMPLETES: &'static [&'static str] = &["bytes"];
    async fn complete(&self, request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
        let bytes: usize = request.value().parse().unwrap_or(0);
        Ok(Completions::new(["a".repeat(bytes), "b".repeat(bytes)]))
    }
    async fn render(&self, input: SizeText, _: Invocation) -> Result<Messages, AgentError> {
        Ok(Message::user("a".repeat(input.bytes())).into())
    }
}

fn runtime(runs: &Arc<AtomicUsize>) -> Runtime {
    Carmy::new()
        .tool(Echo(Arc::clone(runs)))
        .tool(Save)
        .tool(Saved)
        .resource(Page)
        .prompt(Letter)
        .limits(Limits::default().with_max_result_bytes(MAX))
        .build()
        .expect("catalog")
}

fn assert_too_large(error: &AgentError) {
    assert_eq!(error.code(), "OUTPUT_TOO_LARGE", "{error}");
    assert_eq!(error.category(), ErrorCategory::Internal);
    assert!(!error.retryable());
    assert_eq!(error.details().unwrap()["max_result_bytes"], MAX);
}

#[test]
fn the_default_bound_is_eight_mebibytes() {
    assert_eq!(Limits::default().max_result_bytes, 8 << 20);
}

#[tokio::test]
async fn a_tool_output_past_the_bound_is_dropped_and_the_call_fails() {
    let runs = Arc::default();
    let runtime = runtime(&runs);
    // `MAX - 2` letters are `MAX` bytes of JSON: the largest result handed back.
    let fits = runtime.call("echo", json!({ "bytes": MAX - 2 })).await;
    assert_eq!(fits.status, ExecutionStatus::Succeeded);
    let over = runtime.call("echo", json!({ "bytes": MAX - 1 })).await;
    assert_eq!(over.status, ExecutionStatus::Failed);
    assert_too_large(over.error().unwrap());
    assert_eq!(over.error().unwrap().details().unwrap()["tool"], "echo");
    let record = runtime.execution(&over.execution_id).expect("recorded");
    assert_eq!(record.error_code.as_deref(), Some("OUTPUT_TOO_LARGE"));
}

#[tokio::test]
async fn a_retry_replays_the_error_and_never_runs_the_tool_again() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(&runs);
    let call = || {
        Request::new("echo", json!({ "bytes": 100 * MAX }))
            .request_id("big-1")
            .context(Context::new().with_principal("alice"))
    };
    let first = runtime.execute(call()).await;
    assert_too_large(first.error().unwrap());
    let retry = runtime.execute(call()).await;
    assert_eq!(retry.status, ExecutionStatus::Replayed);
    assert_eq!(retry.execution_id, first.execution_id);
    assert_eq!(retry.error(), first.error());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_transactional_tool_whose_output_is_dropped_commits_nothing() {
    let runtime = runtime(&Arc::default());
    let over = runtime.call("save", json!({ "bytes": MAX })).await;
    assert_too_large(over.error().unwrap());
    assert_eq!(runtime.call("saved", json!({})).await.result.unwrap(), 0);
    let fits = runtime.call("save", json!({ "bytes": 10 })).await;
    assert!(fits.is_ok());
    assert_eq!(runtime.call("saved", json!({})).await.result.unwrap(), 10);
}

#[tokio::test]
async fn reads_renders_and_completions_past_the_bound_fail_the_same_way() {
    let runtime = runtime(&Arc::default());
    // Text counts as its bytes, bytes as their base64: `MAX` of them, half and half, are more.
    let read = |bytes: usize| runtime.read(Request::read(format!("test://pages/{bytes}")));
    assert!(read(MAX / 2).await.is_ok());
    let over = read(MAX).await;
    assert_eq!(over.status, ExecutionStatus::Failed);
    assert_too_large(over.error().unwrap());

    let render = |bytes: usize| {
        runtime.get_prompt(Request::get_prompt("letter").argument("bytes", bytes.to_string()))
    };
    assert!(render(MAX / 2).await.is_ok());
    let over = render(MAX + 1).await;
    assert_eq!(over.status, ExecutionStatus::Failed);
    assert_too_large(over.error().unwrap());

    let complete = |bytes: usize| {
        runtime.complete(Request::complete(
            CompletionTarget::Prompt("letter".into()),
            "bytes",
            bytes.to_string(),
        ))
    };
    assert_eq!(complete(MAX / 4).await.result.unwrap().values().len(), 2);
    assert_too_large(complete(MAX).await.error().unwrap());
}
