//! Confirmation through the client under a hostile client (issue 14), in process with rmcp's
//! client, several sessions of one server under different principals:
//!
//! - the question names the tool's declared fields, the required ones first, whatever keys a
//!   client adds, and says how many it left out (row 7);
//! - the calls that wait for their users (2025-11-25) are bounded per principal, and a call that
//!   stops waiting (the runtime's approval deadline, or cancelled) withdraws its question and
//!   frees its place (row 6);
//! - another principal's flood of answered confirmations never refuses yours (row 9).
//!
//! The same deadline at its default (two minutes) is proved over stdio against the real binary
//! (`examples/shop/tests/integration/attacks_confirm.rs`).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use carmy_core::{AgentError, Carmy, Context, Effect, Invocation, Limits, Tool, ToolSpec};
use carmy_mcp::{CONFIRM_INPUT_KEY, McpServer};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, Peer, RoleClient, ServiceExt,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult,
        CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest,
        ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, InputResponses,
        ProtocolVersion, RequestId, ServerResult,
    },
    service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService},
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// Bounds every wait on the other side, so a broken server fails a test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);

#[derive(Deserialize, JsonSchema)]
struct Target {
    /// The order.
    order_id: String,
    /// Why.
    #[allow(dead_code)]
    reason: Option<String>,
}

/// Destructive, so it needs `confirm:drop_order`; counts its runs.
struct DropOrder(Arc<AtomicU64>);

impl Tool for DropOrder {
    type Input = Target;
    type Output = Value;
    const SPEC: ToolSpec =
        ToolSpec::new("drop_order", Effect::Destructive).description("Drops an order.");
    async fn run(&self, input: Target, _: Invocation) -> Result<Value, AgentError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(json!({ "dropped": input.order_id }))
    }
}

/// A question put to the test's human: its message, the request's id, and where to answer.
struct Asked {
    message: String,
    id: RequestId,
    answer: oneshot::Sender<ElicitResult>,
}

/// A client whose user answers only when the test says so, and which reports the questions the
/// server withdraws.
#[derive(Clone)]
struct Human {
    asked: mpsc::UnboundedSender<Asked>,
    withdrawn: mpsc::UnboundedSender<RequestId>,
}

impl ClientHandler for Human {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("confirm-bounds", "0.0.0"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Err(ErrorData::invalid_params("a form was expected", None));
        };
        let (answer, answered) = oneshot::channel();
        let _ = self.asked.send(Asked {
            message,
            id: context.id,
            answer,
        });
        answered
            .await
            .map_err(|_| ErrorData::internal_error("the test dropped the question", None))
    }

    async fn on_cancelled(
        &self,
        params: CancelledNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        if let Some(id) = params.request_id {
            let _ = self.withdrawn.send(id);
        }
    }
}

struct Session {
    client: RunningService<RoleClient, Human>,
    asked: mpsc::UnboundedReceiver<Asked>,
    withdrawn: mpsc::UnboundedReceiver<RequestId>,
}

impl Session {
    fn peer(&self) -> Peer<RoleClient> {
        self.client.peer().clone()
    }

    async fn next_question(&mut self) -> Asked {
        tokio::time::timeout(PATIENCE, self.asked.recv())
            .await
            .expect("a question within the patience")
            .expect("the client is alive")
    }

    /// Whether a question arrives within `wait`.
    async fn question_within(&mut self, wait: Duration) -> Option<Asked> {
        tokio::time::timeout(wait, self.asked.recv())
            .await
            .ok()
            .flatten()
    }
}

/// One server, shared by every session opened on it (its confirmation state included).
struct Shop {
    server: McpServer,
    runs: Arc<AtomicU64>,
}

impl Shop {
    fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    fn with_limits(limits: Limits) -> Self {
        let runs = Arc::new(AtomicU64::new(0));
        let runtime = Carmy::new()
            .tool(DropOrder(Arc::clone(&runs)))
            .limits(limits)
            .build()
            .expect("catalog");
        let server = McpServer::new(runtime).confirm_via_client(true);
        Self { server, runs }
    }

    /// A session of `principal`'s, on 2025-11-25 (`modern: false`) or 2026-07-28.
    async fn session(&self, principal: &str, modern: bool) -> Session {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server_io);
        let server = self
            .server
            .clone()
            .context(Context::new().with_principal(principal));
        tokio::spawn(server.serve_io(read, write));
        let (asked_tx, asked) = mpsc::unbounded_channel();
        let (withdrawn_tx, withdrawn) = mpsc::unbounded_channel();
        let human = Human {
            asked: asked_tx,
            withdrawn: withdrawn_tx,
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
        Session {
            client,
            asked,
            withdrawn,
        }
    }
}

fn params(arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("drop_order")
        .with_arguments(arguments.as_object().cloned().expect("an object"))
}

fn error_code(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result.meta.as_ref().expect("_meta")["carmy/error"]["code"]
        .as_str()
        .expect("code")
        .to_owned()
}

fn answer(approve: bool) -> ElicitResult {
    let mut result = ElicitResult::new(ElicitationAction::Accept);
    result.content = Some(json!({ "approve": approve }));
    result
}

fn responses(approve: bool) -> InputResponses {
    let mut responses = InputResponses::new();
    responses.insert(
        CONFIRM_INPUT_KEY.to_owned(),
        serde_json::to_value(answer(approve)).expect("JSON"),
    );
    responses
}

/// A 2026-07-28 first round: the question and the state.
async fn first_round(peer: &Peer<RoleClient>, arguments: Value) -> (String, String) {
    match peer.call_tool_once(params(arguments)).await.expect("call") {
        CallToolResponse::InputRequired(required) => {
            let requests = required.input_requests.expect("input requests");
            let request = serde_json::to_value(&requests[CONFIRM_INPUT_KEY]).expect("JSON");
            let message = request["params"]["message"].as_str().expect("message");
            (message.to_owned(), required.request_state.expect("state"))
        }
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// A 2026-07-28 retry carrying the answer and the state.
async fn retry(
    peer: &Peer<RoleClient>,
    arguments: Value,
    approve: bool,
    state: String,
) -> CallToolResult {
    let params = params(arguments)
        .with_input_responses(responses(approve))
        .with_request_state(state);
    match peer.call_tool_once(params).await.expect("retry") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

// --- Row 7 -------------------------------------------------------------------------------------

/// `drop_order` of `ord-1001`, and 30 keys the tool does not declare, named to sort first.
fn crowded() -> Value {
    let mut arguments = json!({ "order_id": "ord-1001" });
    for n in 0..30 {
        arguments[format!("a{n:02}")] = json!("x".repeat(100));
    }
    arguments
}

const CROWDED_QUESTION: &str = "Allow `drop_order` (destructive) with {order_id: \"ord-1001\"}? \
                                Not shown: 30 keys the tool does not declare.";

#[tokio::test]
async fn the_question_names_the_declared_target_whatever_keys_are_added() {
    let shop = Shop::new();
    let mut legacy = shop.session("alice", false).await;
    let peer = legacy.peer();
    let call = tokio::spawn(async move { peer.call_tool(params(crowded())).await });
    let asked = legacy.next_question().await;
    assert_eq!(asked.message, CROWDED_QUESTION);
    let _ = asked.answer.send(answer(true));
    let result = call.await.expect("joined").expect("call");
    // What was approved is what was named.
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let text = serde_json::to_string(&result.content).expect("JSON");
    assert!(text.contains(r#"\"dropped\":\"ord-1001\""#), "{text}");
    assert_eq!(shop.runs.load(Ordering::SeqCst), 1);

    let modern = shop.session("alice", true).await;
    let (message, _) = first_round(&modern.peer(), crowded()).await;
    assert_eq!(message, CROWDED_QUESTION);
}

// --- Row 6 -------------------------------------------------------------------------------------

/// Sends `drop_order` on `session`, answered in a task.
fn spawn_call(
    session: &Session,
    order: &str,
) -> tokio::task::JoinHandle<Result<CallToolResult, rmcp::ServiceError>> {
    let peer = session.peer();
    let arguments = json!({ "order_id": order });
    tokio::spawn(async move { peer.call_tool(params(arguments)).await })
}

#[tokio::test]
async fn legacy_waiting_calls_are_bounded_per_principal() {
    let shop = Shop::new();
    let mut alice = shop.session("alice", false).await;
    let mut bob = shop.session("bob", false).await;

    // Alice's fifth call may not wait: refused at once, retryable.
    let calls: Vec<_> = (0..5)
        .map(|n| spawn_call(&alice, &format!("ord-{n}")))
        .collect();
    let mut questions = Vec::new();
    for _ in 0..4 {
        questions.push(alice.next_question().await);
    }
    assert!(
        alice
            .question_within(Duration::from_millis(300))
            .await
            .is_none(),
        "a fifth question"
    );
    // Bob has his own share.
    let bobs = spawn_call(&bob, "ord-b");
    let bobs_question = bob.next_question().await;

    let mut refused = 0;
    for question in questions {
        let _ = question.answer.send(answer(false));
    }
    for call in calls {
        let result = tokio::time::timeout(PATIENCE, call)
            .await
            .expect("answered")
            .expect("joined")
            .expect("call");
        match error_code(&result).as_str() {
            "CONFIRMATION_DECLINED" => {}
            "CAPACITY" => {
                let error = &result.meta.as_ref().expect("_meta")["carmy/error"];
                assert_eq!(error["retryable"], true, "{error}");
                refused += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(refused, 1);
    let _ = bobs_question.answer.send(answer(true));
    let result = bobs.await.expect("joined").expect("call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(shop.runs.load(Ordering::SeqCst), 1);

    // Answered, the places are free again.
    let call = spawn_call(&alice, "ord-9");
    let _ = alice.next_question().await.answer.send(answer(true));
    let result = call.await.expect("joined").expect("call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
}

#[tokio::test]
async fn legacy_a_cancelled_call_withdraws_its_question_and_frees_its_place() {
    let shop = Shop::new();
    let mut alice = shop.session("alice", false).await;
    let peer = alice.peer();
    let mut handles = Vec::new();
    for n in 0..4 {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params(
            json!({ "order_id": format!("ord-{n}") }),
        )));
        handles.push(
            peer.send_cancellable_request(request, PeerRequestOptions::no_options())
                .await
                .expect("sent"),
        );
    }
    let mut questions = Vec::new();
    for _ in 0..4 {
        questions.push(alice.next_question().await);
    }

    // The client gives up on one call: its question is withdrawn.
    let handle = handles.pop().expect("a call");
    handle
        .cancel(Some("changed my mind".into()))
        .await
        .expect("cancelled");
    let withdrawn = tokio::time::timeout(PATIENCE, alice.withdrawn.recv())
        .await
        .expect("the question is withdrawn")
        .expect("the client is alive");
    assert!(
        questions.iter().any(|question| question.id == withdrawn),
        "{withdrawn:?} is none of the questions asked"
    );

    // Its place is free: another call is asked.
    let call = spawn_call(&alice, "ord-9");
    let asked = alice.next_question().await;
    assert!(asked.message.contains("ord-9"), "{}", asked.message);
    let _ = asked.answer.send(answer(false));
    let result = call.await.expect("joined").expect("call");
    assert_eq!(error_code(&result), "CONFIRMATION_DECLINED");
    assert_eq!(shop.runs.load(Ordering::SeqCst), 0);
    for question in questions {
        let _ = question.answer.send(answer(false));
    }
    for handle in handles {
        match handle.await_response().await.expect("answered") {
            ServerResult::CallToolResult(result) => {
                assert_eq!(error_code(&result), "CONFIRMATION_DECLINED");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn legacy_past_the_approval_deadline_the_question_is_withdrawn_and_a_late_answer_runs_nothing()
 {
    let deadline = Duration::from_millis(300);
    let shop = Shop::with_limits(Limits::default().with_approval_timeout(deadline));
    let mut alice = shop.session("alice", false).await;
    let call = spawn_call(&alice, "ord-1");
    let asked = alice.next_question().await;

    // Nobody answers: the call ends, and the client is told the question is withdrawn.
    let result = tokio::time::timeout(PATIENCE, call)
        .await
        .expect("answered past the deadline")
        .expect("joined")
        .expect("call");
    assert_eq!(error_code(&result), "CONFIRMATION_TIMEOUT");
    let withdrawn = tokio::time::timeout(PATIENCE, alice.withdrawn.recv())
        .await
        .expect("the question is withdrawn")
        .expect("the client is alive");
    assert_eq!(withdrawn, asked.id);

    // The answer comes late: nothing runs, and the place it held is free.
    let _ = asked.answer.send(answer(true));
    let call = spawn_call(&alice, "ord-2");
    let asked = alice.next_question().await;
    assert!(asked.message.contains("ord-2"), "{}", asked.message);
    let _ = asked.answer.send(answer(false));
    let result = call.await.expect("joined").expect("call");
    assert_eq!(error_code(&result), "CONFIRMATION_DECLINED");
    assert_eq!(shop.runs.load(Ordering::SeqCst), 0);
}

// --- Row 9 -------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principals_flood_never_refuses_your_confirmation() {
    let shop = Shop::new();
    let alice = shop.session("alice", true).await;
    let mallory = shop.session("mallory", true).await;
    let target = json!({ "order_id": "ord-1" });

    // Alice is asked; her user takes a while.
    let (_, alices_state) = first_round(&alice.peer(), target.clone()).await;

    // Meanwhile Mallory answers 10,000 questions of her own, declining each.
    let mut rounds = tokio::task::JoinSet::new();
    for worker in 0..20 {
        let peer = mallory.peer();
        let target = json!({ "order_id": format!("m-{worker}") });
        rounds.spawn(async move {
            for _ in 0..500 {
                let (_, state) = first_round(&peer, target.clone()).await;
                let result = retry(&peer, target.clone(), false, state).await;
                assert_eq!(error_code(&result), "CONFIRMATION_DECLINED");
            }
        });
    }
    while let Some(done) = rounds.join_next().await {
        done.expect("Mallory's rounds");
    }

    // Alice's answer, from before the flood, still counts; and once only.
    let result = retry(&alice.peer(), target.clone(), true, alices_state.clone()).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(shop.runs.load(Ordering::SeqCst), 1);
    let replayed = retry(&alice.peer(), target.clone(), true, alices_state).await;
    assert_eq!(error_code(&replayed), "CONFIRMATION_INVALID");

    // Mallory herself is not locked out either: a question asked now is answered.
    let (_, state) = first_round(&mallory.peer(), target.clone()).await;
    let result = retry(&mallory.peer(), target, true, state).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(shop.runs.load(Ordering::SeqCst), 2);
}
