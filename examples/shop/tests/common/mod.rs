//! The real shop binary, driven as a hostile client would: `shop mcp` over stdio, line by line,
//! with its memory read from `/proc` while it is attacked.
#![allow(dead_code, unreachable_pub)]

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
};

use serde_json::{Value, json};

/// The shop binary under attack: this build's, or another's named by `SHOP_BIN` (a release
/// build, or an older one to see an attack succeed).
pub fn shop_bin() -> String {
    std::env::var("SHOP_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_shop").to_owned())
}

/// The idempotency store of every shop started here: this process's memory. Tests run in
/// parallel and run again, so they must not share (and replay from) the default file.
const STORE: (&str, &str) = ("CARMY_STORE", "memory");

/// `shop mcp` (plus `args`), with a 2025-11-25 session opened.
pub struct StdioShop {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl StdioShop {
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(shop_bin())
            .arg("mcp")
            .args(args)
            .env(STORE.0, STORE.1)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the shop binary starts");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut shop = Self {
            child,
            stdin,
            stdout,
        };
        shop.send(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "attacker", "version": "1" }
            }
        }));
        assert_eq!(shop.receive()["id"], 0);
        shop.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        shop
    }

    pub fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("JSON");
        line.push(b'\n');
        self.stdin.write_all(&line).expect("the server reads");
    }

    pub fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("the server writes");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line}"))
    }

    /// `tools/call` `name` with `arguments` (and `_meta`, when given), answered.
    pub fn call(&mut self, id: u64, name: &str, arguments: Value, meta: Option<Value>) -> Value {
        let mut params = json!({ "name": name, "arguments": arguments });
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }));
        let answer = self.receive();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// The server's resident memory now and at its peak, in KiB (`VmRSS`, `VmHWM`).
    pub fn memory_kib(&self) -> (u64, u64) {
        memory_kib(self.child.id())
    }
}

impl Drop for StdioShop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `carmy/error` code of a tool error result.
/// A process's resident memory now and at its peak, in KiB (`VmRSS`, `VmHWM` from `/proc`).
fn memory_kib(pid: u32) -> (u64, u64) {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's /proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or_else(|| panic!("{name} in /proc status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

pub fn error_code(answer: &Value) -> &str {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    answer["result"]["_meta"]["carmy/error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error code in {answer}"))
}

/// `shop http --stateless` on a free loopback port, with bearer tokens, spoken to in plain
/// HTTP/1.1 over one keep-alive connection per client.
pub struct HttpShop {
    child: Child,
    addr: String,
    dir: std::path::PathBuf,
}

impl HttpShop {
    /// Serves with one token per `(token, principal)`.
    pub fn start(tokens: &[(&str, &str)]) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!(
            "shop-attack-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("a clock")
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let file = dir.join("tokens");
        let lines: String = tokens
            .iter()
            .map(|(token, principal)| format!("{token} {principal}\n"))
            .collect();
        std::fs::write(&file, lines).expect("the token file");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let child = Command::new(shop_bin())
            .env(STORE.0, STORE.1)
            .args([
                "http",
                "--addr",
                "127.0.0.1:0",
                "--stateless",
                "--token-file",
            ])
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the shop binary starts");
        Self::listening(child, dir)
    }

    /// A shop started with its stderr piped, once it says where it listens; `dir` is removed
    /// with it.
    pub fn listening(mut child: Child, dir: std::path::PathBuf) -> Self {
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let addr = loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).expect("the server's log") > 0,
                "the server exited before listening"
            );
            if let Some(url) = line.trim().strip_prefix("listening on http://") {
                break url.trim_end_matches("/mcp").to_owned();
            }
        };
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Self { child, addr, dir }
    }

    /// A client holding `token`.
    pub fn client(&self, token: &str) -> HttpClient {
        let stream = std::net::TcpStream::connect(&self.addr).expect("connect");
        HttpClient {
            addr: self.addr.clone(),
            token: token.to_owned(),
            reader: BufReader::new(stream.try_clone().expect("clone")),
            stream,
        }
    }
}

impl Drop for HttpShop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One keep-alive connection, one bearer token.
pub struct HttpClient {
    addr: String,
    token: String,
    stream: std::net::TcpStream,
    reader: BufReader<std::net::TcpStream>,
}

impl HttpClient {
    /// POSTs `message` to `/mcp`: the status and the JSON body.
    pub fn post(&mut self, message: &Value) -> (u16, Value) {
        self.post_with(&[], message)
    }

    /// POSTs `message` to `/mcp` with the extra `headers`: the status and the JSON body.
    pub fn post_with(&mut self, headers: &[(&str, &str)], message: &Value) -> (u16, Value) {
        let body = message.to_string();
        let extra: String = headers
            .iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             {extra}Content-Length: {}\r\n\r\n",
            self.addr,
            self.token,
            body.len()
        );
        self.stream
            .write_all(format!("{head}{body}").as_bytes())
            .expect("send");
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut length = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("a header");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("a length");
            }
        }
        let mut body = vec![0; length];
        std::io::Read::read_exact(&mut self.reader, &mut body).expect("the body");
        let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
        (status, body)
    }

    /// `tools/call` `name` with `arguments` under `request_id`, answered.
    pub fn call(&mut self, name: &str, arguments: Value, request_id: &str) -> Value {
        let (status, body) = self.post(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": name, "arguments": arguments,
                "_meta": { "carmy/request_id": request_id }
            }
        }));
        assert_eq!(status, 200, "{body}");
        body
    }
}

impl HttpShop {
    /// `shop http` with `args` (sessions on, unless `--stateless` is among them), one token per
    /// `(token, principal)`, and at most `open_files` descriptors when given (`ulimit -n`).
    pub fn serve(tokens: &[(&str, &str)], args: &[&str], open_files: Option<u32>) -> Self {
        Self::serve_with_env(tokens, args, open_files, &[])
    }

    /// [`serve`](Self::serve) with `env` set for the server (configuration by `CARMY_...`).
    pub fn serve_with_env(
        tokens: &[(&str, &str)],
        args: &[&str],
        open_files: Option<u32>,
        env: &[(&str, &str)],
    ) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!(
            "shop-attack-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("a clock")
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let file = dir.join("tokens");
        let lines: String = tokens
            .iter()
            .map(|(token, principal)| format!("{token} {principal}\n"))
            .collect();
        std::fs::write(&file, lines).expect("the token file");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let mut command = match open_files {
            Some(limit) => {
                let mut shell = Command::new("sh");
                shell
                    .arg("-c")
                    .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
                    .arg(shop_bin());
                shell
            }
            None => Command::new(shop_bin()),
        };
        let mut child = command
            .env(STORE.0, STORE.1)
            .envs(env.iter().copied())
            .args(["http", "--addr", "127.0.0.1:0", "--token-file"])
            .arg(&file)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the shop binary starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let addr = loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).expect("the server's log") > 0,
                "the server exited before listening"
            );
            if let Some(url) = line.trim().strip_prefix("listening on http://") {
                break url.trim_end_matches("/mcp").to_owned();
            }
        };
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Self { child, addr, dir }
    }

    /// `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The server's resident memory now and at its peak, in KiB (`VmRSS`, `VmHWM`).
    pub fn memory_kib(&self) -> (u64, u64) {
        memory_kib(self.child.id())
    }
}

impl StdioShop {
    /// Writes `bytes` as they are: what a hostile client sends is not always JSON.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("the server reads");
    }
}

/// `shop mcp` (plus `args`, in `env`) at the byte level: stdout read by a thread so that a
/// missing answer fails a test instead of hanging it, stderr kept for the log tests, stdin
/// detachable for a writer thread. Nothing is sent until the test says so.
pub struct RawShop {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

/// How long a test waits for an answer that must come.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(20);

impl RawShop {
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(shop_bin())
            .arg("mcp")
            .args(args)
            .env(STORE.0, STORE.1)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the shop binary starts");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut line = String::new();
                match stdout.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if send.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut stderr = child.stderr.take().expect("piped");
        let stderr = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stderr, &mut bytes);
            bytes
        });
        Self {
            child,
            stdin,
            lines,
            stderr: Some(stderr),
        }
    }

    /// `initialize` (2025-11-25) declaring `capabilities`, and `notifications/initialized`.
    pub fn initialize(&mut self, capabilities: Value) {
        self.send(&json!({
            "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": { "name": "attacker", "version": "1" }
            }
        }));
        let answer = self.receive();
        assert_eq!(answer["id"], "init", "{answer}");
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    }

    /// Writes `bytes` as they are (add the newline yourself).
    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is attached");
        stdin.write_all(bytes).expect("the server reads");
        stdin.flush().expect("the server reads");
    }

    pub fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("JSON");
        line.push(b'\n');
        self.write(&line);
    }

    /// Stdin, for a writer thread; `None` afterwards.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin is attached")
    }

    /// The next line the server writes, as written, if one comes `within`.
    pub fn receive_line(&mut self, within: std::time::Duration) -> Option<String> {
        self.lines.recv_timeout(within).ok()
    }

    /// The next message, which must come within [`PATIENCE`].
    pub fn receive(&mut self) -> Value {
        let line = self
            .receive_line(PATIENCE)
            .expect("the server answered in time");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line}"))
    }

    /// `VmRSS` and `VmHWM`, in KiB.
    pub fn memory_kib(&self) -> (u64, u64) {
        memory_kib(self.child.id())
    }

    /// Closes stdin, waits for the server to exit, and returns everything it logged.
    pub fn stderr(mut self) -> Vec<u8> {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + PATIENCE;
        while self.child.try_wait().expect("wait").is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the server exits once stdin closes"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.stderr
            .take()
            .expect("once")
            .join()
            .expect("the stderr reader")
    }
}

impl Drop for RawShop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// --- Confirmation through the client: `attacks_confirm.rs` ------------------------------------

/// The lifecycle a [`ConfirmShop`] session speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// 2025-11-25: `initialize`; the server asks with `elicitation/create` and awaits it.
    Legacy,
    /// 2026-07-28: no `initialize`, `_meta` on every request; the server answers
    /// `input_required` with a sealed `requestState`.
    Modern,
}

/// `shop mcp --confirm-via-client` (plus `args`) with a client that declares form elicitation.
/// A thread reads the server's lines, so a test can wait for one message with a deadline, and
/// answer the server's own requests while its calls are pending.
pub struct ConfirmShop {
    child: Child,
    stdin: ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
    /// Messages read while waiting for another one, oldest first.
    held: std::collections::VecDeque<Value>,
    wire: Wire,
}

impl ConfirmShop {
    pub fn start(wire: Wire, args: &[&str]) -> Self {
        let mut child = Command::new(shop_bin())
            .args(["mcp", "--confirm-via-client"])
            .args(args)
            .env(STORE.0, STORE.1)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the shop binary starts");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let message =
                    serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line}"));
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let mut shop = Self {
            child,
            stdin,
            lines,
            held: Default::default(),
            wire,
        };
        match wire {
            Wire::Legacy => {
                shop.send(&json!({
                    "jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": { "elicitation": { "form": {} } },
                        "clientInfo": { "name": "attacker", "version": "1" }
                    }
                }));
                shop.answer(0);
                shop.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
            }
            Wire::Modern => {
                let meta = Self::modern_meta();
                shop.send(&json!({
                    "jsonrpc": "2.0", "id": 0, "method": "server/discover",
                    "params": { "_meta": meta }
                }));
                shop.answer(0);
            }
        }
        shop
    }

    /// The `_meta` every 2026-07-28 request carries.
    fn modern_meta() -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
            "io.modelcontextprotocol/clientInfo": { "name": "attacker", "version": "1" }
        })
    }

    pub fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("JSON");
        line.push(b'\n');
        self.stdin.write_all(&line).expect("the server reads");
    }

    /// Sends `tools/call` `name` with `arguments` and the other `params` given (the session's
    /// `_meta` is added on 2026-07-28); the answer is read with [`answer`](Self::answer).
    pub fn send_call(&mut self, id: u64, name: &str, arguments: &Value, params: Value) {
        let mut params = match params {
            Value::Object(params) => params,
            _ => Default::default(),
        };
        params.insert("name".into(), name.into());
        params.insert("arguments".into(), arguments.clone());
        if self.wire == Wire::Modern {
            params.insert("_meta".into(), Self::modern_meta());
        }
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }));
    }

    /// `tools/call`, answered (within [`PATIENCE`]).
    pub fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        self.send_call(id, name, &arguments, json!({}));
        self.answer(id)
    }

    /// The first message `matches` accepts, within `patience`; `None` past it. Messages read on
    /// the way are kept for later.
    pub fn wait_for(
        &mut self,
        patience: std::time::Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        if let Some(at) = self.held.iter().position(&matches) {
            return self.held.remove(at);
        }
        let deadline = std::time::Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(message) if matches(&message) => return Some(message),
                Ok(message) => self.held.push_back(message),
                Err(_) => return None,
            }
        }
    }

    /// The answer to our request `id`, within [`PATIENCE`].
    pub fn answer(&mut self, id: u64) -> Value {
        self.answer_within(id, PATIENCE)
            .unwrap_or_else(|| panic!("no answer to request {id} within {PATIENCE:?}"))
    }

    /// The answer to our request `id`, within `patience`.
    pub fn answer_within(&mut self, id: u64, patience: std::time::Duration) -> Option<Value> {
        self.wait_for(patience, |message| {
            message.get("method").is_none() && message["id"] == id
        })
    }

    /// The next request or notification of the server's with `method`, within `patience`.
    pub fn server_message(&mut self, method: &str, patience: std::time::Duration) -> Option<Value> {
        self.wait_for(patience, |message| message["method"] == method)
    }

    /// The server's resident memory now and at its peak, in KiB (`VmRSS`, `VmHWM`).
    pub fn memory_kib(&self) -> (u64, u64) {
        memory_kib(self.child.id())
    }
}

impl Drop for ConfirmShop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
