//! `shop mcp` with a 2025-11-25 session opened, line by line.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
};

use serde_json::{Value, json};

use super::{STORE, memory_kib, shop_bin};

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

impl StdioShop {
    /// Writes `bytes` as they are: what a hostile client sends is not always JSON.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("the server reads");
    }
}
