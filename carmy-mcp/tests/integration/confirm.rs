//! Confirmation through the client (`McpServer::confirm_via_client`): elicitation on 2025-11-25,
//! `input_required` with a sealed state on 2026-07-28, in process with rmcp's client.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use carmy_core::{AgentError, Carmy, Context, Effect, Invocation, Runtime, Tool, ToolSpec};
use carmy_mcp::{CONFIRM_INPUT_KEY, CallThread, McpServer};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
        ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, InputResponses,
        ProtocolVersion, RequestMetaObject,
    },
    service::{RequestContext, RunningService},
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Target {
    order_id: String,
}

/// Destructive, so it needs `confirm:drop_order`; counts its runs and notes their threads.
struct DropOrder(Arc<AtomicU64>, Arc<std::sync::Mutex<Vec<String>>>);

impl Tool for DropOrder {
    type Input = Target;
    type Output = Value;
    const SPEC: ToolSpec =
        ToolSpec::new("drop_order", Effect::Destructive).description("Drops an order.");
    async fn run(&self, input: Target, _: Invocation) -> Result<Value, AgentError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        self.1.lock().unwrap().push(thread);
        Ok(json!({ "dropped": input.order_id }))
    }
}

/// Destructive too, and asks its user why before it drops: a confirmation and a question of
/// the tool's own, in one call.
struct DropWithReason(Arc<AtomicU64>);

impl Tool for DropWithReason {
    type Input = Target;
    type Output = Value;
    const SPEC: ToolSpec = ToolSpec::new("drop_with_reason", Effect::Destructive)
        .description("Drops an order, saying why.");
    async fn run(&self, input: Target, invocation: Invocation) -> Result<Value, AgentError> {
        let form = json!({ "type": "object", "properties": { "why": { "type": "string" } } });
        let why = invocation
            .context()
            .ask_input("reason", "Why drop it?", form)
            .await?;
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(json!({ "dropped": input.order_id, "why": why.content }))
    }
}

/// How the test client answers `elicitation/create`, and whether it can at all.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answer {
    Approve,
    Refuse,
    Decline,
    Cancel,
    NoElicitation,
}

#[derive(Clone)]
struct Human {
    answer: Answer,
    asked: Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for Human {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.answer == Answer::NoElicitation {
            ClientCapabilities::default()
        } else {
            ClientCapabilities::builder().enable_elicitation().build()
        };
        ClientConfig::new(capabilities, Implementation::new("confirm-test", "0.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        Ok(answer(self.answer))
    }
}

fn answer(answer: Answer) -> ElicitResult {
    let (action, approve) = match answer {
        Answer::Approve => (ElicitationAction::Accept, Some(true)),
        Answer::Refuse => (ElicitationAction::Accept, Some(false)),
        Answer::Decline | Answer::NoElicitation => (ElicitationAction::Decline, None),
        Answer::Cancel => (ElicitationAction::Cancel, None),
    };
    let mut result = ElicitResult::new(action);
    result.content = approve.map(|approve| json!({ "approve": approve }));
    result
}

struct Setup {
    client: RunningService<RoleClient, Human>,
    runtime: Runtime,
    runs: Arc<AtomicU64>,
    /// Runs of `drop_with_reason`.
    reasoned: Arc<AtomicU64>,
    /// The threads the runs ran on.
    threads: Arc<std::sync::Mutex<Vec<String>>>,
    asked: Arc<std::sync::Mutex<Vec<String>>>,
}

async fn setup(modern: bool, answer: Answer, context: Context, confirm: bool) -> Setup {
    setup_on(modern, answer, context, confirm, CallThread::Off).await
}

async fn setup_on(
    modern: bool,
    answer: Answer,
    context: Context,
    confirm: bool,
    call_thread: CallThread,
) -> Setup {
    let runs = Arc::new(AtomicU64::new(0));
    let threads = Arc::default();
    let reasoned = Arc::new(AtomicU64::new(0));
    let runtime: Runtime = Carmy::new()
        .tool(DropOrder(Arc::clone(&runs), Arc::clone(&threads)))
        .tool(DropWithReason(Arc::clone(&reasoned)))
        .build()
        .expect("catalog");
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    let server = McpServer::new(runtime.clone())
        .context(context)
        .confirm_via_client(confirm)
        .call_thread(call_thread);
    tokio::spawn(server.serve_io(read, write));
    let asked = Arc::default();
    let human = Human {
        answer,
        asked: Arc::clone(&asked),
    };
    let client = if modern {
        human
            .serve_with_lifecycle(
                client_io,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("discover")
    } else {
        human.serve(client_io).await.expect("initialize")
    };
    Setup {
        client,
        runtime,
        runs,
        reasoned,
        threads,
        asked,
    }
}

fn params(order_id: &str, request_id: Option<&str>) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("drop_order").with_arguments(
        json!({ "order_id": order_id })
            .as_object()
            .cloned()
            .unwrap(),
    );
    if let Some(request_id) = request_id {
        let mut meta = RequestMetaObject::new();
        meta.insert("carmy/request_id".into(), request_id.into());
        params.meta = Some(meta);
    }
    params
}

fn error_code(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let meta = result.meta.as_ref().expect("_meta");
    meta["carmy/error"]["code"]
        .as_str()
        .expect("code")
        .to_owned()
}

/// The execution the result reports, as the runtime recorded it.
fn recorded(setup: &Setup, result: &CallToolResult) -> carmy_core::ExecutionRecord {
    let id = result.meta.as_ref().expect("_meta")["carmy/execution_id"]
        .as_str()
        .expect("execution id");
    setup
        .runtime
        .execution(&carmy_core::ExecutionId::from(id))
        .unwrap_or_else(|| panic!("execution {id} was never recorded"))
}

fn status(result: &CallToolResult) -> String {
    result.meta.as_ref().expect("_meta")["carmy/status"]
        .as_str()
        .expect("status")
        .to_owned()
}

// --- 2025-11-25: elicitation/create ----------------------------------------------------------

#[tokio::test]
async fn legacy_approve_runs_the_call_once() {
    let setup = setup(false, Answer::Approve, Context::new(), true).await;
    let result = setup
        .client
        .call_tool(params("ord-1", None))
        .await
        .expect("call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(setup.runs.load(Ordering::SeqCst), 1);
    let asked = setup.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [r#"Allow `drop_order` (destructive) with {order_id: "ord-1"}?"#]
    );
}

/// The questions of calls on the call thread go out under ids of their own, and the client's
/// answers find their way back to them.
#[tokio::test]
async fn legacy_approvals_reach_calls_on_the_call_thread() {
    let setup = setup_on(
        false,
        Answer::Approve,
        Context::new(),
        true,
        CallThread::Always,
    )
    .await;
    let (first, second) = tokio::join!(
        setup.client.call_tool(params("ord-1", None)),
        setup.client.call_tool(params("ord-2", None)),
    );
    for result in [first, second] {
        let result = result.expect("call");
        assert_eq!(result.is_error, Some(false), "{result:?}");
    }
    assert_eq!(setup.runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        *setup.threads.lock().unwrap(),
        ["carmy-calls", "carmy-calls"]
    );
    assert_eq!(setup.asked.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn legacy_decline_cancel_or_false_do_not_run() {
    for answer in [Answer::Decline, Answer::Cancel, Answer::Refuse] {
        let setup = setup(false, answer, Context::new(), true).await;
        let result = setup
            .client
            .call_tool(params("ord-1", None))
            .await
            .expect("call");
        assert_eq!(error_code(&result), "CONFIRMATION_DECLINED", "{answer:?}");
        assert_eq!(status(&result), "rejected");
        assert_eq!(setup.runs.load(Ordering::SeqCst), 0, "{answer:?}");
        // A refusal is an execution of the runtime's like any other.
        let record = recorded(&setup, &result);
        assert_eq!(record.status, carmy_core::ExecutionStatus::Rejected);
        assert_eq!(record.error_code.as_deref(), Some("CONFIRMATION_DECLINED"));
    }
}

#[tokio::test]
async fn without_elicitation_or_when_off_confirmation_is_required() {
    for modern in [false, true] {
        let setup = setup(modern, Answer::NoElicitation, Context::new(), true).await;
        let result = setup
            .client
            .call_tool(params("ord-1", None))
            .await
            .expect("call");
        assert_eq!(error_code(&result), "CONFIRMATION_REQUIRED");
        let setup = setup_off(modern).await;
        let result = setup
            .client
            .call_tool(params("ord-1", None))
            .await
            .expect("call");
        assert_eq!(error_code(&result), "CONFIRMATION_REQUIRED");
        assert!(
            setup.asked.lock().unwrap().is_empty(),
            "nobody is asked when off"
        );
        assert_eq!(setup.runs.load(Ordering::SeqCst), 0);
    }
}

async fn setup_off(modern: bool) -> Setup {
    setup(modern, Answer::Approve, Context::new(), false).await
}

#[tokio::test]
async fn a_host_grant_takes_precedence() {
    for modern in [false, true] {
        let granted = Context::new().with_grant("confirm:drop_order");
        let setup = setup(modern, Answer::Decline, granted, true).await;
        let result = setup
            .client
            .call_tool(params("ord-1", None))
            .await
            .expect("call");
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert!(setup.asked.lock().unwrap().is_empty(), "nobody is asked");
        assert_eq!(setup.runs.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn invalid_arguments_are_refused_without_asking() {
    for modern in [false, true] {
        let setup = setup(modern, Answer::Approve, Context::new(), true).await;
        let params = CallToolRequestParams::new("drop_order")
            .with_arguments(json!({ "order": 1 }).as_object().cloned().unwrap());
        let result = setup.client.call_tool(params).await.expect("call");
        assert_eq!(error_code(&result), "INVALID_ARGUMENTS");
        assert!(setup.asked.lock().unwrap().is_empty());
    }
}

// --- 2026-07-28: input_required, sealed request state ----------------------------------------

/// The first round: an `input_required` result with the confirmation and a state.
async fn first_round(setup: &Setup, params: CallToolRequestParams) -> (String, String) {
    match setup.client.call_tool_once(params).await.expect("call") {
        CallToolResponse::InputRequired(required) => {
            let requests = required.input_requests.expect("input requests");
            let request = serde_json::to_value(&requests[CONFIRM_INPUT_KEY]).unwrap();
            assert_eq!(request["method"], "elicitation/create");
            assert_eq!(
                request["params"]["requestedSchema"]["required"],
                json!(["approve"])
            );
            let message = request["params"]["message"].as_str().unwrap().to_owned();
            (message, required.request_state.expect("request state"))
        }
        other => panic!("expected input_required, got {other:?}"),
    }
}

fn responses(answer: Answer) -> InputResponses {
    let mut responses = InputResponses::new();
    responses.insert(
        CONFIRM_INPUT_KEY.to_owned(),
        serde_json::to_value(self::answer(answer)).unwrap(),
    );
    responses
}

async fn retry(
    setup: &Setup,
    params: CallToolRequestParams,
    answer: Answer,
    state: &str,
) -> CallToolResult {
    let params = params
        .with_input_responses(responses(answer))
        .with_request_state(state);
    match setup.client.call_tool_once(params).await.expect("retry") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

/// A retry whose state fails verification: refused `-32602` before anything runs, as any
/// request state that fails is.
async fn refused(setup: &Setup, params: CallToolRequestParams, state: &str) -> String {
    let params = params
        .with_input_responses(responses(Answer::Approve))
        .with_request_state(state);
    match setup.client.call_tool_once(params).await {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(
                error.code,
                rmcp::model::ErrorCode::INVALID_PARAMS,
                "{error:?}"
            );
            assert!(
                error.message.starts_with("`requestState` is not valid"),
                "{error:?}"
            );
            error.message.into_owned()
        }
        other => panic!("expected -32602, got {other:?}"),
    }
}

#[tokio::test]
async fn modern_client_driven_rounds_approve_and_decline() {
    // rmcp's client fulfils input_required through its elicitation handler and retries.
    let setup = setup(true, Answer::Approve, Context::new(), true).await;
    let result = setup
        .client
        .call_tool(params("ord-1", None))
        .await
        .expect("call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(setup.runs.load(Ordering::SeqCst), 1);
    assert_eq!(setup.asked.lock().unwrap().len(), 1);

    let setup = self::setup(true, Answer::Decline, Context::new(), true).await;
    let result = setup
        .client
        .call_tool(params("ord-1", None))
        .await
        .expect("call");
    assert_eq!(error_code(&result), "CONFIRMATION_DECLINED");
    assert_eq!(setup.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn modern_approval_runs_once_and_its_state_is_single_use() {
    let setup = setup(true, Answer::Approve, Context::new(), true).await;
    let (message, state) = first_round(&setup, params("ord-1", None)).await;
    assert_eq!(
        message,
        r#"Allow `drop_order` (destructive) with {order_id: "ord-1"}?"#
    );
    assert_eq!(
        setup.runs.load(Ordering::SeqCst),
        0,
        "nothing runs before the answer"
    );

    let result = retry(&setup, params("ord-1", None), Answer::Approve, &state).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(setup.runs.load(Ordering::SeqCst), 1);

    // The same state again: refused, not run.
    let result = retry(&setup, params("ord-1", None), Answer::Approve, &state).await;
    assert_eq!(error_code(&result), "CONFIRMATION_INVALID");
    assert_eq!(setup.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn modern_decline_does_not_run() {
    for answer in [Answer::Decline, Answer::Cancel, Answer::Refuse] {
        let setup = setup(true, Answer::Approve, Context::new(), true).await;
        let (_, state) = first_round(&setup, params("ord-1", None)).await;
        let result = retry(&setup, params("ord-1", None), answer, &state).await;
        assert_eq!(error_code(&result), "CONFIRMATION_DECLINED", "{answer:?}");
        assert_eq!(setup.runs.load(Ordering::SeqCst), 0);
    }
}

#[tokio::test]
async fn modern_tampered_or_retargeted_state_is_refused() {
    let setup = setup(true, Answer::Approve, Context::new(), true).await;
    let (_, state) = first_round(&setup, params("ord-1", None)).await;

    // Every single-character change of the state.
    for index in [0, state.len() / 2, state.len() - 1] {
        let mut tampered = state.clone().into_bytes();
        tampered[index] = if tampered[index] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        refused(&setup, params("ord-1", None), &tampered).await;
    }
    // Not a state at all.
    refused(&setup, params("ord-1", None), "approved").await;
    // The genuine state, moved to other arguments.
    let message = refused(&setup, params("ord-2", None), &state).await;
    assert!(message.contains("made for another call"), "{message}");
    assert_eq!(setup.runs.load(Ordering::SeqCst), 0);

    // None of that used it up: the genuine retry still runs, once.
    let result = retry(&setup, params("ord-1", None), Answer::Approve, &state).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(setup.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn modern_state_of_another_principal_is_refused() {
    // Two servers, one runtime each; the state is bound to the principal and the key.
    let alice = setup(
        true,
        Answer::Approve,
        Context::new().with_principal("alice"),
        true,
    )
    .await;
    let (_, state) = first_round(&alice, params("ord-1", None)).await;
    let bob = setup(
        true,
        Answer::Approve,
        Context::new().with_principal("bob"),
        true,
    )
    .await;
    refused(&bob, params("ord-1", None), &state).await;
    assert_eq!(bob.runs.load(Ordering::SeqCst), 0);
}

/// The `input_required` answer of one round: its questions' keys and its state.
async fn round(
    setup: &Setup,
    params: CallToolRequestParams,
) -> Result<(Vec<String>, String), CallToolResult> {
    match setup.client.call_tool_once(params).await.expect("call") {
        CallToolResponse::InputRequired(required) => Ok((
            required
                .input_requests
                .expect("input requests")
                .keys()
                .cloned()
                .collect(),
            required.request_state.expect("request state"),
        )),
        CallToolResponse::Complete(result) => Err(result),
        other => panic!("expected input_required or a result, got {other:?}"),
    }
}

#[tokio::test]
async fn a_confirmed_call_that_asks_its_own_question_completes_once() {
    // One round trip carries both: the confirmation, then the tool's question, each answer
    // kept in the state of the next round.
    let setup = setup(true, Answer::Approve, Context::new(), true).await;
    let call = || {
        CallToolRequestParams::new("drop_with_reason")
            .with_arguments(json!({ "order_id": "ord-7" }).as_object().cloned().unwrap())
    };
    let (keys, confirm_state) = round(&setup, call()).await.expect("asks first");
    assert_eq!(keys, [CONFIRM_INPUT_KEY]);
    let (keys, question_state) = round(
        &setup,
        call()
            .with_input_responses(responses(Answer::Approve))
            .with_request_state(&confirm_state),
    )
    .await
    .expect("then the tool's question");
    assert_eq!(keys, ["reason"]);
    assert_eq!(setup.reasoned.load(Ordering::SeqCst), 0);
    // Only this round's answer is sent back: the approval travels in the state.
    let mut reason = InputResponses::new();
    reason.insert(
        "reason".to_owned(),
        json!({ "action": "accept", "content": { "why": "duplicate" } }),
    );
    let answered = || {
        call()
            .with_input_responses(reason.clone())
            .with_request_state(&question_state)
    };
    let result = round(&setup, answered()).await.expect_err("runs");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let text = &result.content[0].as_text().expect("text").text;
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({ "dropped": "ord-7", "why": { "why": "duplicate" } })
    );
    assert_eq!(setup.reasoned.load(Ordering::SeqCst), 1);
    // The last state carries the approval, so it is single-use too: replayed, nothing runs.
    let replayed = round(&setup, answered()).await.expect_err("refused");
    assert_eq!(error_code(&replayed), "CONFIRMATION_INVALID");
    // The first state was redeemed by the second round: it approves nothing again.
    let reused = round(
        &setup,
        call()
            .with_input_responses(responses(Answer::Approve))
            .with_request_state(&confirm_state),
    )
    .await
    .expect_err("refused");
    assert_eq!(error_code(&reused), "CONFIRMATION_INVALID");
    assert_eq!(setup.reasoned.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_confirmation_round_trip_is_one_idempotent_call() {
    let setup = setup(true, Answer::Approve, Context::new(), true).await;
    let (_, state) = first_round(&setup, params("ord-1", Some("req-1"))).await;
    // The first round claimed nothing: the approved retry with the same request id runs.
    let first = retry(
        &setup,
        params("ord-1", Some("req-1")),
        Answer::Approve,
        &state,
    )
    .await;
    assert_eq!(first.is_error, Some(false), "{first:?}");
    assert_eq!(status(&first), "succeeded");
    assert_eq!(setup.runs.load(Ordering::SeqCst), 1);

    // A further retry of the same call (asked and approved again) replays; it never runs twice.
    let (_, state) = first_round(&setup, params("ord-1", Some("req-1"))).await;
    let again = retry(
        &setup,
        params("ord-1", Some("req-1")),
        Answer::Approve,
        &state,
    )
    .await;
    assert_eq!(status(&again), "replayed");
    assert_eq!(again.structured_content, first.structured_content);
    assert_eq!(setup.runs.load(Ordering::SeqCst), 1);

    // Legacy: the same.
    let setup = self::setup(false, Answer::Approve, Context::new(), true).await;
    let first = setup
        .client
        .call_tool(params("ord-1", Some("req-1")))
        .await
        .unwrap();
    let again = setup
        .client
        .call_tool(params("ord-1", Some("req-1")))
        .await
        .unwrap();
    assert_eq!(status(&first), "succeeded");
    assert_eq!(status(&again), "replayed");
    assert_eq!(setup.runs.load(Ordering::SeqCst), 1);
}
