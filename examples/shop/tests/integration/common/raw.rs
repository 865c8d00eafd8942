//! `shop mcp` at the byte level.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, Command, Stdio},
};

use serde_json::{Value, json};

use super::{STORE, memory_kib, shop_bin};

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

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
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
