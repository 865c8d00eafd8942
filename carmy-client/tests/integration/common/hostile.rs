//! A hostile MCP server, served from a thread of the test itself on a Unix socket (JSON lines,
//! the 2025-11-25 lifecycle): every text it sends carries terminal escape sequences, and it can
//! page without end or answer nothing at all. It records what each connection sent it.

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::net::{UnixListener, UnixStream},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
    time::Duration,
};

use serde_json::{Value, json};

use super::TempDir;

/// In every text the server sends: it would set the window title, clear the screen, write the
/// clipboard (OSC 52), plant a hyperlink (OSC 8), turn the text red through an 8-bit CSI, and
/// move to a new line to forge one of carmy's own.
pub const EVIL: &str = "evil\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\\u{9b}31m\u{7f}\r\nerror: forged";

/// How [`EVIL`] reads once carmy has escaped it on one line.
pub const EVIL_ESCAPED: &str = r"evil\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://evil.example/\x1b\click\x1b]8;;\x1b\\u{9b}31m\x7f\r\nerror: forged";

/// What the server does besides answering with [`EVIL`] texts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Behaviour {
    /// Each list ends after this many pages; `None`: never.
    pub pages: Option<usize>,
    /// Answers nothing at all, `initialize` included.
    pub silent: bool,
    /// Answers `initialize`, then nothing.
    pub silent_after_initialize: bool,
}

/// The server, listening until the test ends.
pub struct Hostile {
    /// What `-t unix -s` takes.
    pub socket: String,
    /// How many list pages it has served, over every connection.
    pub pages_served: Arc<AtomicUsize>,
    sessions: mpsc::Receiver<Vec<Value>>,
    _dir: TempDir,
}

impl Hostile {
    pub fn start(behaviour: Behaviour) -> Self {
        let dir = TempDir::new("hostile");
        let socket = dir.0.join("hostile.sock");
        let listener = UnixListener::bind(&socket).expect("the socket");
        let pages_served = Arc::new(AtomicUsize::new(0));
        let (done, sessions) = mpsc::channel();
        let counter = pages_served.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let connection = Connection {
                    behaviour,
                    writer: Arc::new(Mutex::new(stream.try_clone().expect("a clone"))),
                    pages_served: counter.clone(),
                    asked_for: None,
                };
                let done = done.clone();
                std::thread::spawn(move || {
                    let received = connection.serve(stream);
                    let _ = done.send(received);
                });
            }
        });
        Self {
            socket: socket.display().to_string(),
            pages_served,
            sessions,
            _dir: dir,
        }
    }

    /// Every message one connection sent, once carmy closed it.
    pub fn session(&self) -> Vec<Value> {
        self.sessions
            .recv_timeout(Duration::from_secs(60))
            .expect("a connection that ends")
    }

    pub fn pages(&self) -> usize {
        self.pages_served.load(Ordering::SeqCst)
    }
}

struct Connection {
    behaviour: Behaviour,
    writer: Arc<Mutex<UnixStream>>,
    pages_served: Arc<AtomicUsize>,
    /// The `tools/call` waiting for the answer to the server's question.
    asked_for: Option<Value>,
}

impl Connection {
    fn serve(mut self, stream: UnixStream) -> Vec<Value> {
        let mut received = Vec::new();
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            self.answer(&message);
            received.push(message);
        }
        received
    }

    fn send(&self, message: &Value) {
        let mut writer = self.writer.lock().expect("the writer");
        let _ = writeln!(writer, "{message}");
    }

    fn result(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn answer(&mut self, message: &Value) {
        let id = &message["id"];
        let Some(method) = message["method"].as_str() else {
            // carmy's answer to the question: the call it held up is answered.
            if let Some(call) = self.asked_for.take() {
                let answer = message["result"].to_string();
                self.result(
                    &call,
                    json!({"content": [{"type": "text", "text": format!("answered {answer}")}]}),
                );
            }
            return;
        };
        if id.is_null() || self.behaviour.silent {
            return;
        }
        if method == "initialize" {
            self.result(
                id,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {
                        "tools": {}, "prompts": {}, "logging": {}, "completions": {},
                        "resources": {"subscribe": true},
                    },
                    "serverInfo": {"name": "hostile", "version": "1.0.0"},
                    "instructions": EVIL,
                }),
            );
            return;
        }
        if self.behaviour.silent_after_initialize {
            return;
        }
        let params = &message["params"];
        match method {
            "tools/list" => self.page(id, params, "tools", |n| {
                json!({"name": format!("{EVIL}{n}"), "title": EVIL, "description": EVIL,
                       "inputSchema": {"type": "object"}})
            }),
            "resources/list" => self.page(id, params, "resources", |n| {
                json!({"uri": format!("{EVIL}{n}"), "name": EVIL, "mimeType": EVIL,
                       "description": EVIL})
            }),
            "resources/templates/list" => self.page(id, params, "resourceTemplates", |n| {
                json!({"uriTemplate": format!("{EVIL}{n}"), "name": EVIL, "mimeType": EVIL,
                       "description": EVIL})
            }),
            "prompts/list" => self.page(id, params, "prompts", |n| {
                json!({"name": format!("{EVIL}{n}"), "description": EVIL,
                       "arguments": [{"name": EVIL, "required": true}]})
            }),
            "tools/call" => self.call(id, params),
            "resources/read" => self.result(
                id,
                json!({"contents": [{"uri": EVIL, "mimeType": "text/plain", "text": EVIL}]}),
            ),
            "prompts/get" => self.result(
                id,
                json!({"description": EVIL, "messages": [
                    {"role": "user", "content": {"type": "text", "text": EVIL}},
                ]}),
            ),
            "completion/complete" => self.result(
                id,
                json!({"completion": {"values": [EVIL, "plain"], "hasMore": true, "total": 9}}),
            ),
            "resources/subscribe" => {
                self.result(id, json!({}));
                self.notify("notifications/resources/updated", json!({"uri": EVIL}));
            }
            "logging/setLevel" | "ping" => self.result(id, json!({})),
            _ => self.send(&json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("{method}: {EVIL}")}})),
        }
    }

    /// One page of a list of one item, with a cursor to the next while there is one.
    fn page(&self, id: &Value, params: &Value, key: &str, item: impl Fn(usize) -> Value) {
        let number: usize = params["cursor"]
            .as_str()
            .and_then(|cursor| cursor.parse().ok())
            .unwrap_or(0);
        self.pages_served.fetch_add(1, Ordering::SeqCst);
        let mut page = json!({ key: [item(number)] });
        if self.behaviour.pages.is_none_or(|pages| number + 1 < pages) {
            page["nextCursor"] = json!((number + 1).to_string());
        }
        self.result(id, page);
    }

    /// `evil`: a log line, progress and content, all hostile; `fail`: a JSON-RPC error;
    /// `is_error`: a tool error; `ask`: a question first; `slow`: progress every 100 ms for
    /// `seconds`; `silent`: no answer.
    fn call(&mut self, id: &Value, params: &Value) {
        let token = params["_meta"]["progressToken"].clone();
        match params["name"].as_str().unwrap_or("") {
            "evil" => {
                self.notify(
                    "notifications/message",
                    json!({"level": "warning", "logger": EVIL, "data": EVIL}),
                );
                self.notify(
                    "notifications/progress",
                    json!({"progressToken": token, "progress": 1, "total": 2, "message": EVIL}),
                );
                self.result(
                    id,
                    json!({"content": [
                        {"type": "text", "text": EVIL},
                        {"type": "resource_link", "uri": EVIL, "name": EVIL},
                        {"type": "resource", "resource": {"uri": EVIL, "text": EVIL}},
                        {"type": "image", "mimeType": EVIL, "data": "aGk="},
                    ]}),
                );
            }
            "fail" => self.send(&json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32000, "message": EVIL, "data": {"detail": EVIL}}})),
            "is_error" => self.result(
                id,
                json!({"content": [{"type": "text", "text": EVIL}], "isError": true}),
            ),
            "ask" => {
                self.asked_for = Some(id.clone());
                self.send(&json!({"jsonrpc": "2.0", "id": "question-1",
                "method": "elicitation/create", "params": {
                    "mode": "form",
                    "message": EVIL,
                    "requestedSchema": {"type": "object", "properties": {
                        "answer": {"type": "string", "description": EVIL},
                    }},
                }}));
            }
            "slow" => {
                let steps = params["arguments"]["seconds"].as_u64().unwrap_or(1) * 10;
                let writer = self.writer.clone();
                let id = id.clone();
                std::thread::spawn(move || {
                    let send = |message: Value| {
                        let mut writer = writer.lock().expect("the writer");
                        let _ = writeln!(writer, "{message}");
                    };
                    for step in 1..=steps {
                        std::thread::sleep(Duration::from_millis(100));
                        send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": step, "total": steps}}));
                    }
                    send(json!({"jsonrpc": "2.0", "id": id,
                        "result": {"content": [{"type": "text", "text": "done"}]}}));
                });
            }
            _ => {}
        }
    }
}
