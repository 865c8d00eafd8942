//! Confirmation through the client: `attacks_confirm.rs`.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, Command, Stdio},
};

use serde_json::{Value, json};

use super::{PATIENCE, STORE, memory_kib, shop_bin};

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
