//! Tasks over MCP (the tasks extension of 2026-07-28, SEP-2663), through rmcp's client in
//! process: a call of a tool that may run as a task becomes one for a client that declared the
//! extension, which polls `tasks/get`, answers with `tasks/update` and stops it with
//! `tasks/cancel`; everyone else gets plain calls, or `-32021`. Bad input is answered and the
//! server serves on. What a 2025-11-25 client gets (its own experimental tasks are not served:
//! see docs/08-tasks.md) is checked on the raw lines.

use crate::common;

use std::time::Duration;

use carmy_core::{
    AgentError, Ask, Asks, Carmy, Context, Effect, Invocation, NoInput, Runtime, TaskSupport, Tool,
    ToolSpec,
};
use carmy_mcp::{META_TASK, McpServer};
use common::PATIENCE;
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
        ClientCapabilities, ClientConfig, CreateTaskResult, ErrorCode, GetTaskParams,
        GetTaskResult, Implementation, InputResponses, ProtocolVersion, TASKS_EXTENSION_ID,
        TaskPayload, TaskStatus, UpdateTaskParams,
    },
    service::{RunningService, ServiceError},
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Debug, Deserialize, JsonSchema)]
struct Work {
    /// How long to work.
    millis: u64,
}

/// Works for a while; a task when the caller can follow one.
struct Slow;

impl Tool for Slow {
    type Input = Work;
    type Output = Value;
    const SPEC: ToolSpec = ToolSpec::new("slow", Effect::None)
        .task(TaskSupport::Optional)
        .timeout(Duration::from_secs(30));

    async fn run(&self, input: Work, invocation: Invocation) -> Result<Value, AgentError> {
        invocation
            .context()
            .progress(0.0, Some(1.0), Some("started"));
        tokio::time::sleep(Duration::from_millis(input.millis)).await;
        Ok(json!({ "worked_ms": input.millis }))
    }
}

/// Runs only as a task.
struct Batch;

impl Tool for Batch {
    type Input = NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("batch", Effect::None).task(TaskSupport::Required);

    async fn run(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok("batched".into())
    }
}

/// Asks two questions at once, then says what it was told.
struct Confirm;

impl Tool for Confirm {
    type Input = NoInput;
    type Output = Value;
    const SPEC: ToolSpec = ToolSpec::new("confirm", Effect::None).task(TaskSupport::Optional);

    async fn run(&self, _: NoInput, invocation: Invocation) -> Result<Value, AgentError> {
        let form = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
        let answers = invocation
            .context()
            .ask(
                Asks::new()
                    .with("first", Ask::input("First?", form.clone()))
                    .with("second", Ask::input("Second?", form)),
            )
            .await?;
        Ok(json!({
            "first": answers.input("first")?.action.as_str(),
            "second": answers.input("second")?.action.as_str(),
        }))
    }
}

/// Never a task.
struct Echo;

impl Tool for Echo {
    type Input = NoInput;
    type Output = String;
    const SPEC: ToolSpec = ToolSpec::new("echo", Effect::None);

    async fn run(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
        Ok("echo".into())
    }
}

fn runtime() -> Runtime {
    Carmy::new()
        .tool(Slow)
        .tool(Batch)
        .tool(Confirm)
        .tool(Echo)
        .build()
        .expect("catalog")
}

/// A client that declares (or not) the tasks extension and form elicitation.
#[derive(Clone)]
struct TaskClient {
    tasks: bool,
}

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        let builder = ClientCapabilities::builder().enable_elicitation();
        let capabilities = if self.tasks {
            builder.enable_tasks().build()
        } else {
            builder.build()
        };
        ClientConfig::new(capabilities, Implementation::new("tasks-test", "0.0.0"))
    }
}

type Session = RunningService<RoleClient, TaskClient>;

/// A 2026-07-28 client of `server`.
async fn connect(server: McpServer, tasks: bool) -> Session {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(server.serve_io(read, write));
    TaskClient { tasks }
        .serve_with_lifecycle(
            client_io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover")
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(name.to_owned());
    match arguments {
        Value::Object(arguments) => params.with_arguments(arguments),
        _ => params,
    }
}

async fn create(session: &Session, name: &str, arguments: Value) -> CreateTaskResult {
    match session
        .call_tool_once(call(name, arguments))
        .await
        .expect("call")
    {
        CallToolResponse::Task(created) => created,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn complete(session: &Session, name: &str, arguments: Value) -> CallToolResult {
    match session
        .call_tool_once(call(name, arguments))
        .await
        .expect("call")
    {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

fn mcp_error(error: ServiceError) -> rmcp::model::ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => panic!("expected a JSON-RPC error, got {other}"),
    }
}

async fn get(session: &Session, task_id: &str) -> GetTaskResult {
    session
        .peer()
        .get_task(GetTaskParams::new(task_id))
        .await
        .expect("tasks/get")
}

/// Polls `tasks/get` until `done` holds.
async fn until(
    session: &Session,
    task_id: &str,
    done: impl Fn(&GetTaskResult) -> bool,
) -> GetTaskResult {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let task = get(session, task_id).await;
        if done(&task) {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task stayed {task:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn ended(session: &Session, task_id: &str) -> GetTaskResult {
    until(session, task_id, |task| task.task.status().is_terminal()).await
}

fn result_of(task: &GetTaskResult) -> CallToolResult {
    match &task.task.payload {
        TaskPayload::Completed { result } => {
            serde_json::from_value(Value::Object(result.clone())).expect("a CallToolResult")
        }
        other => panic!("expected a completed task, got {other:?}"),
    }
}

#[tokio::test]
async fn a_call_becomes_a_task_its_client_polls_to_the_end() {
    let session = connect(McpServer::new(runtime()), true).await;
    let created = create(&session, "slow", json!({ "millis": 300 })).await;
    let wire = serde_json::to_value(&created).unwrap();
    assert_eq!(wire["resultType"], "task");
    assert_eq!(wire["status"], "working");
    assert!(wire.get("task").is_none() && wire.get("requestState").is_none());
    assert_eq!(wire["ttlMs"], 3_600_000);
    assert_eq!(wire["pollIntervalMs"], 500);
    let task_id = created.task.task_id.clone();
    assert!(
        task_id.starts_with("task_") && task_id.len() == 37,
        "{task_id}"
    );
    assert!(created.meta.unwrap().contains_key("carmy/execution_id"));
    // Found at once: the task exists before the client hears of it.
    let working = get(&session, &task_id).await;
    assert_eq!(working.task.status(), TaskStatus::Working);
    let done = ended(&session, &task_id).await;
    assert_eq!(done.task.status(), TaskStatus::Completed);
    let result = result_of(&done);
    assert_eq!(common::text_json(&result), json!({ "worked_ms": 300 }));
    assert_ne!(result.is_error, Some(true));
    let meta = done.meta.unwrap();
    assert_eq!(meta["carmy/progress"]["done"], 0.0);
    assert_eq!(done.task.task.status_message.as_deref(), Some("started"));
    // The inlined result is the one a plain call gets, with the execution's `_meta`.
    assert_eq!(result.meta.unwrap()["carmy/status"], "succeeded");
}

#[tokio::test]
async fn a_task_is_cancelled_with_tasks_cancel_as_often_as_asked() {
    let session = connect(McpServer::new(runtime()), true).await;
    let task_id = create(&session, "slow", json!({ "millis": 60_000 }))
        .await
        .task
        .task_id;
    session
        .peer()
        .cancel_task(CancelTaskParams::new(task_id.clone()))
        .await
        .expect("tasks/cancel");
    let done = ended(&session, &task_id).await;
    assert_eq!(done.task.status(), TaskStatus::Cancelled);
    for _ in 0..2 {
        session
            .peer()
            .cancel_task(CancelTaskParams::new(task_id.clone()))
            .await
            .expect("cancelling an ended task is acknowledged");
    }
    assert_eq!(
        get(&session, &task_id).await.task.status(),
        TaskStatus::Cancelled
    );
}

fn accept() -> Value {
    json!({ "action": "accept", "content": { "ok": true } })
}

#[tokio::test]
async fn a_tasks_questions_are_answered_with_tasks_update_one_at_a_time() {
    let session = connect(McpServer::new(runtime()), true).await;
    let task_id = create(&session, "confirm", json!({})).await.task.task_id;
    let waiting = until(&session, &task_id, |task| {
        task.task.status() == TaskStatus::InputRequired
    })
    .await;
    let TaskPayload::InputRequired { input_requests } = &waiting.task.payload else {
        panic!("no inputRequests: {waiting:?}");
    };
    let keys: Vec<String> = input_requests.keys().cloned().collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let request = serde_json::to_value(&input_requests[&keys[0]]).unwrap();
    assert_eq!(request["method"], "elicitation/create");
    // Partial: one answer, plus a key that names nothing (ignored, acknowledged all the same).
    let mut first = InputResponses::new();
    first.insert(keys[0].clone(), accept());
    first.insert("nothing-asked".into(), json!({ "ignored": true }));
    session
        .peer()
        .update_task(UpdateTaskParams::new(task_id.clone(), first))
        .await
        .expect("tasks/update");
    let partial = get(&session, &task_id).await;
    assert_eq!(partial.task.status(), TaskStatus::InputRequired);
    let TaskPayload::InputRequired { input_requests } = &partial.task.payload else {
        panic!("{partial:?}");
    };
    assert_eq!(input_requests.keys().collect::<Vec<_>>(), [&keys[1]]);
    let mut second = InputResponses::new();
    second.insert(keys[1].clone(), json!({ "action": "decline" }));
    session
        .peer()
        .update_task(UpdateTaskParams::new(task_id.clone(), second))
        .await
        .expect("tasks/update");
    let done = ended(&session, &task_id).await;
    assert_eq!(
        common::text_json(&result_of(&done)),
        json!({ "first": "accept", "second": "decline" })
    );
}

#[tokio::test]
async fn bad_task_requests_are_answered_and_the_server_serves_on() {
    let session = connect(McpServer::new(runtime()), true).await;
    // Unknown task ids, for every method.
    let unknown = "task_00000000000000000000000000000000";
    let error = mcp_error(
        session
            .peer()
            .get_task(GetTaskParams::new(unknown))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(error.data.unwrap()["error"]["code"], "TASK_NOT_FOUND");
    let error = mcp_error(
        session
            .peer()
            .cancel_task(CancelTaskParams::new(unknown))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    let error = mcp_error(
        session
            .peer()
            .update_task(UpdateTaskParams::new(unknown, InputResponses::new()))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    // An answer of the wrong shape to a waiting question is refused; nothing is taken.
    let task_id = create(&session, "confirm", json!({})).await.task.task_id;
    let waiting = until(&session, &task_id, |task| {
        task.task.status() == TaskStatus::InputRequired
    })
    .await;
    let TaskPayload::InputRequired { input_requests } = &waiting.task.payload else {
        panic!("{waiting:?}");
    };
    let keys: Vec<String> = input_requests.keys().cloned().collect();
    let mut bad = InputResponses::new();
    bad.insert(keys[0].clone(), accept());
    bad.insert(keys[1].clone(), json!(12345));
    let error = mcp_error(
        session
            .peer()
            .update_task(UpdateTaskParams::new(task_id.clone(), bad))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(
        error.data.unwrap()["field"],
        format!("inputResponses/{}", keys[1])
    );
    let TaskPayload::InputRequired { input_requests } = get(&session, &task_id).await.task.payload
    else {
        panic!("the task stopped waiting");
    };
    assert_eq!(input_requests.len(), 2, "nothing was taken");
    // Params that do not parse at all.
    let raw = session
        .peer()
        .send_request(rmcp::model::ClientRequest::CustomRequest(
            rmcp::model::CustomRequest::new("tasks/get", Some(json!({ "taskId": 7 }))),
        ))
        .await;
    let error = mcp_error(raw.unwrap_err());
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("taskId"), "{}", error.message);
    // And the server serves on.
    let done = complete(&session, "echo", json!({})).await;
    assert_eq!(common::text_json(&done), json!("echo"));
    session
        .peer()
        .cancel_task(CancelTaskParams::new(task_id))
        .await
        .unwrap();
}

#[tokio::test]
async fn another_principals_task_is_not_found() {
    let runtime = runtime();
    let alice = connect(
        McpServer::new(runtime.clone()).context(Context::new().with_principal("alice")),
        true,
    )
    .await;
    let bob = connect(
        McpServer::new(runtime).context(Context::new().with_principal("bob")),
        true,
    )
    .await;
    let task_id = create(&alice, "slow", json!({ "millis": 60_000 }))
        .await
        .task
        .task_id;
    let error = mcp_error(
        bob.peer()
            .get_task(GetTaskParams::new(task_id.clone()))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(error.data.unwrap()["error"]["code"], "TASK_NOT_FOUND");
    mcp_error(
        bob.peer()
            .cancel_task(CancelTaskParams::new(task_id.clone()))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        get(&alice, &task_id).await.task.status(),
        TaskStatus::Working
    );
    alice
        .peer()
        .cancel_task(CancelTaskParams::new(task_id.clone()))
        .await
        .unwrap();
    assert_eq!(
        ended(&alice, &task_id).await.task.status(),
        TaskStatus::Cancelled
    );
}

#[tokio::test]
async fn a_client_without_the_extension_gets_plain_calls_or_minus_32021() {
    let session = connect(McpServer::new(runtime()), false).await;
    let plain = complete(&session, "slow", json!({ "millis": 1 })).await;
    assert_eq!(common::text_json(&plain), json!({ "worked_ms": 1 }));
    let error = mcp_error(
        session
            .call_tool_once(call("batch", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    let data = error.data.unwrap();
    assert!(data["requiredCapabilities"]["extensions"][TASKS_EXTENSION_ID].is_object());
    assert_eq!(data["error"]["code"], "TASK_REQUIRED");
    // rmcp refuses the tasks methods to it before they reach the server.
    let error = mcp_error(
        session
            .peer()
            .get_task(GetTaskParams::new("task_x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
}

#[tokio::test]
async fn tools_say_whether_they_run_as_tasks_and_the_server_says_it_serves_them() {
    let session = connect(McpServer::new(runtime()), true).await;
    let tools = session.list_all_tools().await.expect("tools/list");
    let support = |name: &str| {
        let tool = tools.iter().find(|tool| tool.name == name).unwrap();
        tool.meta.as_ref().unwrap()[META_TASK].clone()
    };
    assert_eq!(
        [support("slow"), support("batch"), support("echo")],
        [json!("optional"), json!("required"), json!("forbidden")]
    );
    let info = session.peer_info().expect("discovered");
    let extensions = info.capabilities.extensions.as_ref().expect("extensions");
    assert!(extensions.contains_key(TASKS_EXTENSION_ID));
    // A catalog without a task tool says nothing of tasks, and answers them -32601.
    let plain = Carmy::new().tool(Echo).build().unwrap();
    let session = connect(McpServer::new(plain), true).await;
    let info = session.peer_info().expect("discovered");
    assert!(
        info.capabilities
            .extensions
            .as_ref()
            .is_none_or(|extensions| !extensions.contains_key(TASKS_EXTENSION_ID))
    );
    let error = mcp_error(
        session
            .peer()
            .get_task(GetTaskParams::new("task_x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
}

/// A 2025-11-25 session, line by line: what its experimental tasks get.
#[tokio::test]
async fn a_2025_11_25_session_gets_plain_calls_and_no_tasks() {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(McpServer::new(runtime()).serve_io(read, write));
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut lines = BufReader::new(client_read).lines();
    let mut exchange = async |message: Value| -> Value {
        let mut line = message.to_string();
        line.push('\n');
        client_write.write_all(line.as_bytes()).await.unwrap();
        if message.get("id").is_none() {
            return Value::Null;
        }
        let answer = tokio::time::timeout(PATIENCE, lines.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&answer).unwrap()
    };
    let initialized = exchange(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": { "tasks": { "requests": { "sampling": {} } } },
            "clientInfo": { "name": "legacy", "version": "0" }
        }
    }))
    .await;
    let capabilities = &initialized["result"]["capabilities"];
    assert!(capabilities.get("tasks").is_none(), "{capabilities}");
    assert!(
        capabilities
            .get("extensions")
            .is_none_or(|extensions| extensions.get(TASKS_EXTENSION_ID).is_none()),
        "{capabilities}"
    );
    exchange(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    // A task-augmented call: rmcp's parse drops `task`; the call runs as a plain one.
    let answer = exchange(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "slow", "arguments": { "millis": 1 }, "task": { "ttl": 60000 } }
    }))
    .await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({ "worked_ms": 1 })
    );
    assert!(answer["result"].get("task").is_none());
    // A tool that runs only as a task cannot run for it.
    let answer = exchange(json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "batch", "task": { "ttl": 60000 } }
    }))
    .await;
    assert_eq!(answer["error"]["code"], -32021);
    // `tasks/get` and `tasks/cancel` are the extension's methods to rmcp, which wants its
    // capability; `tasks/result` and `tasks/list` do not exist.
    for (id, method) in [(4, "tasks/get"), (5, "tasks/cancel")] {
        let answer = exchange(json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": { "taskId": "task_x" }
        }))
        .await;
        assert_eq!(answer["error"]["code"], -32021, "{method}: {answer}");
    }
    for (id, method) in [(6, "tasks/result"), (7, "tasks/list")] {
        let answer = exchange(json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": { "taskId": "task_x" }
        }))
        .await;
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
}
