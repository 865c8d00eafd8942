//! The `carmy` binary run as a user runs it, against the shop served over each transport.
#![allow(dead_code, unreachable_pub)]

pub mod hostile;

use std::{
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    process::{Child, ChildStderr, Command, ExitStatus, Stdio},
    sync::{OnceLock, mpsc},
    time::{Duration, Instant},
};

/// How long any one run of `carmy` may take before the test fails (and the process is killed).
const RUN_LIMIT: Duration = Duration::from_secs(60);

pub const CARMY: &str = env!("CARGO_BIN_EXE_carmy");

/// The shop binary: `SHOP_BIN`, or this workspace's, built once per test binary with the
/// profile `carmy` was built with (a `cargo test` does not build other packages' binaries).
pub fn shop_bin() -> &'static Path {
    static SHOP: OnceLock<PathBuf> = OnceLock::new();
    SHOP.get_or_init(|| {
        if let Some(path) = std::env::var_os("SHOP_BIN") {
            return PathBuf::from(path);
        }
        let dir = Path::new(CARMY).parent().expect("carmy's directory");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "--quiet", "-p", "shop"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if dir.file_name().is_some_and(|name| name == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "cargo build -p shop failed");
        let shop = dir.join("shop");
        assert!(shop.exists(), "no shop binary at {}", shop.display());
        shop
    })
}

/// What one run printed, and how it ended.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    #[track_caller]
    pub fn ok(self) -> Self {
        assert_eq!(self.code(), Some(0), "{self:#?}");
        self
    }

    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {self:#?}"))
    }
}

/// `carmy args…` to the end, within [`RUN_LIMIT`].
pub fn carmy(args: &[&str]) -> Run {
    let child = Command::new(CARMY)
        .args(args)
        .env_remove("RUST_LOG")
        .env("CARMY_STORE", "memory")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("carmy starts");
    finish(child)
}

/// Waits for `child` (killed past [`RUN_LIMIT`]) and collects what it printed.
pub fn finish(mut child: Child) -> Run {
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "carmy ran for more than {RUN_LIMIT:?}; stderr: {}",
                stderr.recv().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        status,
        stdout: stdout.recv().unwrap_or_default(),
        stderr: stderr.recv().unwrap_or_default(),
    }
}

/// Reads `pipe` to its end on a thread, so a full pipe never blocks the child.
fn drain(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<String> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        let _ = send.send(text);
    });
    receive
}

/// Sends SIGINT to `pid`, as Ctrl-C on a terminal does (through `kill`: this workspace forbids
/// the `unsafe` a direct call would need).
pub fn interrupt(pid: u32) {
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// Reads lines of `stderr` until one contains `needle`; every line read is returned.
pub fn wait_for_line(stderr: &mut BufReader<ChildStderr>, needle: &str) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).expect("stderr");
        assert!(read > 0, "stderr ended before `{needle}`: {seen}");
        seen.push_str(&line);
        if line.contains(needle) {
            return seen;
        }
    }
}

/// A fresh directory under the system's temporary one, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "carmy-client-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("a clock")
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A shop serving in the background (`http` or `unix`), stopped on drop.
pub struct Served {
    child: Child,
    /// What `-s` takes to reach it: the URL, or the socket's path.
    pub server: String,
    _dir: TempDir,
}

impl Served {
    /// `shop http` on a free port, bearer `token` required.
    pub fn http(token: &str) -> Self {
        Self::http_with(token, &[])
    }

    /// [`http`](Self::http), with more of `shop http`'s arguments.
    pub fn http_with(token: &str, args: &[&str]) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new("http");
        let tokens = dir.0.join("tokens");
        std::fs::write(&tokens, format!("{token} tester\n")).expect("the token file");
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let mut child = Command::new(shop_bin())
            .args(["http", "--addr", "127.0.0.1:0", "--token-file"])
            .arg(&tokens)
            .args(args)
            .env_remove("RUST_LOG")
            .env("CARMY_STORE", "memory")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the shop starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let seen = wait_for_line(&mut stderr, "listening on http://");
        let url = seen
            .lines()
            .find_map(|line| line.split("listening on ").nth(1))
            .expect("the address")
            .trim()
            .to_owned();
        keep_draining(stderr);
        Self {
            child,
            server: url,
            _dir: dir,
        }
    }

    /// `shop unix` on a socket in a fresh directory.
    pub fn unix() -> Self {
        Self::unix_with(&[])
    }

    /// [`unix`](Self::unix), with more of `shop unix`'s arguments.
    pub fn unix_with(args: &[&str]) -> Self {
        let dir = TempDir::new("unix");
        let socket = dir.0.join("shop.sock");
        let mut child = Command::new(shop_bin())
            .args(["unix", "--path"])
            .arg(&socket)
            .args(args)
            .env_remove("RUST_LOG")
            .env("CARMY_STORE", "memory")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the shop starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        wait_for_line(&mut stderr, "listening on unix:");
        keep_draining(stderr);
        Self {
            child,
            server: socket.display().to_string(),
            _dir: dir,
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Keeps reading a server's stderr so that it never blocks on a full pipe.
fn keep_draining(mut stderr: BufReader<ChildStderr>) {
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stderr.read_to_end(&mut sink);
    });
}

/// `-s` for the shop over stdio, with `args` after `mcp`.
pub fn stdio_server(args: &str) -> String {
    // `--store memory`: each server starts with the shop's initial books, whatever ran before
    // (the default store is a file in the user's data directory, shared by every run).
    format!("{} mcp --store memory {args}", shop_bin().display())
}

/// Kills process `pid` if it still runs after [`RUN_LIMIT`] while this is alive: a test that
/// reads a child's output line by line would otherwise hang on a child that never writes.
pub struct Watchdog(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Watchdog {
    pub fn new(pid: u32) -> Self {
        use std::sync::atomic::Ordering;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watching = done.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            while started.elapsed() < RUN_LIMIT {
                if watching.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if !watching.load(Ordering::SeqCst) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        });
        Self(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
