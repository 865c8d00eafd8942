//! `shop http` spoken to in plain HTTP/1.1.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, Command, Stdio},
};

use serde_json::{Value, json};

use super::{STORE, memory_kib, shop_bin};

/// `shop http --stateless` on a free loopback port, with bearer tokens, spoken to in plain
/// HTTP/1.1 over one keep-alive connection per client.
pub struct HttpShop {
    child: Child,
    addr: String,
    dir: std::path::PathBuf,
}

impl HttpShop {
    /// Serves with one token per `(token, principal)`, stateless.
    pub fn start(tokens: &[(&str, &str)]) -> Self {
        Self::serve(tokens, &["--stateless"], None)
    }

    /// A fresh directory holding a token file of one `TOKEN PRINCIPAL` line per `tokens`:
    /// the directory and the file.
    fn token_dir(tokens: &[(&str, &str)]) -> (std::path::PathBuf, std::path::PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let dir = super::temp_dir("attack");
        let file = dir.join("tokens");
        let lines: String = tokens
            .iter()
            .map(|(token, principal)| format!("{token} {principal}\n"))
            .collect();
        std::fs::write(&file, lines).expect("the token file");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        (dir, file)
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
        let (dir, file) = Self::token_dir(tokens);
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
        let child = command
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
        Self::listening(child, dir)
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
