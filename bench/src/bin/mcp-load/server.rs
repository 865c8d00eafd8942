//! One server process: spawn, MCP handshake, single requests, peak RSS, shutdown.

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde::Deserialize;
use serde_json::{Value, json, value::RawValue};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    process::{Child, ChildStdin, ChildStdout, Command},
    time::timeout,
};

use crate::cli::Contender;

/// The protocol version the driver asks for.
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";

/// How long any single handshake step or check may take before the server is declared hung.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// How much of the server's stderr is kept for error reports.
const STDERR_TAIL: usize = 4096;

/// A response line, parsed without allocating: only the id is looked at closely.
#[derive(Deserialize)]
pub(crate) struct Response<'a> {
    #[serde(borrow)]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) error: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) method: Option<&'a RawValue>,
}

impl Response<'_> {
    /// The numeric id of a response; `None` for notifications, requests and foreign ids.
    pub(crate) fn numeric_id(&self) -> Option<u64> {
        if self.method.is_some() {
            return None;
        }
        self.id.and_then(|id| id.get().parse().ok())
    }
}

/// A running server with its pipes.
pub(crate) struct Server {
    child: Child,
    pid: u32,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<Vec<u8>>>,
    line: Vec<u8>,
}

impl Server {
    /// Spawns the contender and completes the MCP handshake; returns the server and the cold
    /// start (spawn → `initialize` answered).
    pub(crate) async fn start(contender: &Contender) -> Result<(Self, Duration), String> {
        let started = Instant::now();
        let mut child = Command::new(&contender.argv[0])
            .args(&contender.argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", contender.argv.join(" ")))?;
        let pid = child.id().ok_or("the server exited at once")?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::with_capacity(1 << 18, child.stdout.take().expect("piped"));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn(keep_tail(
            child.stderr.take().expect("stderr is piped"),
            stderr.clone(),
        ));
        let mut server = Self {
            child,
            pid,
            stdin,
            stdout,
            stderr,
            line: Vec::with_capacity(1 << 16),
        };

        let initialize = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "mcp-load", "version": env!("CARGO_PKG_VERSION") }
        });
        let answer = server.request(0, "initialize", initialize).await?;
        let cold_start = started.elapsed();
        let version = answer.get("protocolVersion").and_then(Value::as_str);
        if version != Some(PROTOCOL_VERSION) {
            return Err(server.failure(&format!(
                "initialize answered protocol version {version:?}, expected {PROTOCOL_VERSION}"
            )));
        }
        server
            .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok((server, cold_start))
    }

    /// Sends one request and waits for its answer, skipping notifications; an error answer
    /// is returned as `Err`.
    pub(crate) async fn request(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await?;
        loop {
            self.line.clear();
            let read = timeout(STEP_TIMEOUT, self.stdout.read_until(b'\n', &mut self.line)).await;
            match read {
                Err(_) => return Err(self.failure(&format!("no answer to `{method}` in 30 s"))),
                Ok(Err(e)) => return Err(self.failure(&format!("reading `{method}`: {e}"))),
                Ok(Ok(0)) => {
                    return Err(self.failure(&format!("the server exited during `{method}`")));
                }
                Ok(Ok(_)) => {}
            }
            let Ok(response) = serde_json::from_slice::<Response<'_>>(&self.line) else {
                let text = String::from_utf8_lossy(&self.line).into_owned();
                return Err(self.failure(&format!("not JSON-RPC on stdout: {}", text.trim())));
            };
            if response.numeric_id() != Some(id) {
                continue;
            }
            if let Some(error) = response.error {
                return Err(format!("`{method}` failed: {}", error.get()));
            }
            let result = response.result.map(RawValue::get).unwrap_or("null");
            return serde_json::from_str(result).map_err(|e| e.to_string());
        }
    }

    async fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut bytes = serde_json::to_vec(message).expect("a Value serializes");
        bytes.push(b'\n');
        let write = async {
            self.stdin.write_all(&bytes).await?;
            self.stdin.flush().await
        };
        match write.await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failure(&format!("writing to the server: {e}"))),
        }
    }

    /// The server's process id, for reading `/proc`.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Peak resident set size so far (VmHWM), in KiB.
    pub(crate) fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// Closes stdin (the MCP way to end a stdio session), waits a little, then kills.
    pub(crate) async fn shutdown(mut self) {
        drop(self.stdin);
        if timeout(Duration::from_secs(3), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }

    /// An error message with the tail of the server's stderr, when there is one.
    pub(crate) fn failure(&self, message: &str) -> String {
        let tail = self.stderr.lock().expect("not poisoned");
        let tail = String::from_utf8_lossy(&tail);
        let tail = tail.trim();
        if tail.is_empty() {
            message.to_owned()
        } else {
            format!("{message}\n--- server stderr (tail) ---\n{tail}")
        }
    }
}

async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buffer = [0u8; 4096];
    while let Ok(n @ 1..) = stderr.read(&mut buffer).await {
        let mut tail = tail.lock().expect("not poisoned");
        tail.extend_from_slice(&buffer[..n]);
        if tail.len() > 2 * STDERR_TAIL {
            let cut = tail.len() - STDERR_TAIL;
            tail.drain(..cut);
        }
    }
}
