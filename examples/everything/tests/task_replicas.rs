//! Tasks shared by replicas, over the wire: `everything http --stateless` processes on one
//! store (a SQLite file, PostgreSQL, Redis), spoken to as a 2026-07-28 client that follows
//! tasks would.
//!
//! - A long call made to one replica becomes a task that another replica reports on (status,
//!   progress, the result once it is done) and cancels.
//! - On a durable store, a task outlives the replicas: a finished task's result is read from a
//!   replica started after the others are gone.
//!
//! The database servers are real (tests/servers starts them); without them installed those
//! cases skip, unless `CARMY_TEST_SERVERS=required`.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use test_servers::{Postgres, Redis};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The key file every replica of this test process seals its request states with, as replicas
/// sharing a store must (readable by this user alone).
fn state_keys() -> &'static std::path::Path {
    static FILE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        // In the build's own scratch directory, under one name: a static is never dropped, so a
        // file per run in the system's temporary directory would outlive every run.
        let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("everything-state-keys");
        std::fs::write(
            &file,
            "test dGFzay1yZXBsaWNhcy1zaGFyZS10aGlzLWtleS0zMmJ5dGVz\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        file
    })
}

/// One `everything http --stateless` process on the shared store.
struct Replica {
    child: Child,
    addr: String,
}

impl Replica {
    fn start(store: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_everything"))
            .args([
                "http",
                "--stateless",
                "--addr",
                "127.0.0.1:0",
                "--store",
                store,
            ])
            .arg("--state-keys-file")
            .arg(state_keys())
            .env_remove("CARMY_STORE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the everything binary starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        let addr = loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "the replica exited before listening: {said}"
            );
            if let Some(url) = line.trim().strip_prefix("listening on http://") {
                break url.trim_end_matches("/mcp").to_owned();
            }
            said.push_str(&line);
        };
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Self { child, addr }
    }

    /// A 2026-07-28 request that declares the tasks extension; the JSON-RPC answer.
    fn request(&self, method: &str, name: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } },
        });
        let body =
            json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
        let mut stream = TcpStream::connect(&self.addr).expect("the replica accepts");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}\r\nMcp-Name: {name}\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).expect("an answer");
        let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
        assert!(head.starts_with("HTTP/1.1 200"), "{raw}");
        // A JSON body, or an event stream whose data line is the answer.
        let json = if body.trim_start().starts_with('{') {
            body.trim().to_owned()
        } else {
            body.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim)
                .find(|data| data.starts_with('{'))
                .unwrap_or_else(|| panic!("no JSON-RPC answer in {raw}"))
                .to_owned()
        };
        serde_json::from_str(&json).unwrap_or_else(|error| panic!("{error}: {json}"))
    }

    /// `tools/call` of `slow_compute` for `seconds`: the task it became.
    fn start_task(&self, seconds: f64, label: &str) -> String {
        let answer = self.request(
            "tools/call",
            "slow_compute",
            json!({ "name": "slow_compute", "arguments": { "seconds": seconds, "label": label } }),
        );
        let result = &answer["result"];
        assert_eq!(result["resultType"], "task", "{answer}");
        result["taskId"].as_str().expect("a task id").to_owned()
    }

    /// `tasks/get`: the task as this replica reads it.
    fn task(&self, id: &str) -> Value {
        let answer = self.request("tasks/get", id, json!({ "taskId": id }));
        assert!(answer.get("error").is_none(), "{answer}");
        answer["result"].clone()
    }

    /// Reads the task until its status is one of `statuses`, for at most `patience`.
    fn until(&self, id: &str, statuses: &[&str], patience: Duration) -> Value {
        let deadline = Instant::now() + patience;
        loop {
            let task = self.task(id);
            if statuses.iter().any(|status| task["status"] == *status) {
                return task;
            }
            assert!(
                Instant::now() < deadline,
                "task {id} still {} after {patience:?}: {task}",
                task["status"]
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a completed task's inlined result.
fn result_text(task: &Value) -> String {
    let result = &task["result"];
    assert_ne!(result["isError"], true, "{task}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {task}"))
        .to_owned()
}

/// A task started on one replica is followed to its end, and another one cancelled, from the
/// other replica.
fn another_replica_reports_on_and_cancels_a_task(store: &str) {
    let (first, second) = (Replica::start(store), Replica::start(store));
    let id = first.start_task(2.0, "shared");
    // The other replica knows the task at once, and sees it working, then done.
    let seen = second.task(&id);
    assert_eq!(seen["taskId"], id.as_str(), "{seen}");
    let done = second.until(&id, &["completed"], Duration::from_secs(30));
    assert_eq!(result_text(&done), "shared: done after 2 s");
    // Progress was reported along the way, and kept.
    assert!(
        done["_meta"]["carmy/progress"]["done"].as_f64().is_some(),
        "{done}"
    );

    let long = first.start_task(120.0, "long");
    second.until(&long, &["working"], Duration::from_secs(10));
    let cancelled = second.request("tasks/cancel", &long, json!({ "taskId": long }));
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    // The replica running it stops the tool: both now read it cancelled.
    first.until(&long, &["cancelled"], Duration::from_secs(20));
    assert_eq!(second.task(&long)["status"], "cancelled");
}

/// A finished task's result is read from a replica started after every other one is gone.
fn a_finished_task_outlives_its_replicas(store: &str) {
    let first = Replica::start(store);
    let id = first.start_task(1.0, "kept");
    let done = first.until(&id, &["completed"], Duration::from_secs(30));
    drop(first);
    let later = Replica::start(store);
    let read = later.task(&id);
    assert_eq!(read["status"], "completed", "{read}");
    assert_eq!(result_text(&read), result_text(&done));
}

struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "everything-tasks-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn file(&self) -> String {
        self.0.join("store.sqlite").to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn sqlite_another_replica_reports_on_and_cancels_a_task() {
    let scratch = Scratch::new("report");
    another_replica_reports_on_and_cancels_a_task(&scratch.file());
}

#[test]
fn sqlite_a_finished_task_outlives_its_replicas() {
    let scratch = Scratch::new("outlive");
    a_finished_task_outlives_its_replicas(&scratch.file());
}

#[test]
fn postgres_another_replica_reports_on_and_cancels_a_task() {
    if let Some(server) = Postgres::shared() {
        another_replica_reports_on_and_cancels_a_task(&server.create_database("tasks_report"));
    }
}

#[test]
fn postgres_a_finished_task_outlives_its_replicas() {
    if let Some(server) = Postgres::shared() {
        a_finished_task_outlives_its_replicas(&server.create_database("tasks_outlive"));
    }
}

#[test]
fn redis_another_replica_reports_on_and_cancels_a_task() {
    if let Some(server) = Redis::shared() {
        another_replica_reports_on_and_cancels_a_task(&format!("{}1", server.url()));
    }
}

#[test]
fn redis_a_finished_task_outlives_its_replicas() {
    if let Some(server) = Redis::shared() {
        a_finished_task_outlives_its_replicas(&format!("{}2", server.url()));
    }
}
