//! Where the shop keeps its idempotency store: a file in the user's data directory by default,
//! so a retried write is replayed after a restart (even after `kill -9`); `--store memory`
//! forgets it with the process; `--store PATH` and `CARMY_STORE` name another file. How many
//! request ids it keeps is `[request_ids]` in the configuration, and only writes keep one.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
};

use serde_json::{Value, json};

/// A directory of the test's own, removed when it ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "shop-store-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("a clock")
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `shop mcp` with `args`, its data directory in `data` and `CARMY_STORE` as given (unset when
/// `None`), with a session opened.
struct Shop {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Shop {
    fn start(args: &[&str], data: &Path, store_env: Option<&str>) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_shop"));
        command.arg("mcp").args(args).env_remove("CARMY_STORE");
        if let Some(store) = store_env {
            command.env("CARMY_STORE", store);
        }
        Self::spawn(command, data)
    }

    /// `command`, which runs `shop mcp`, with its data directory in `data`.
    fn spawn(mut command: Command, data: &Path) -> Self {
        command
            .env("XDG_DATA_HOME", data)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().expect("the shop binary starts");
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
                "clientInfo": { "name": "store-test", "version": "1" }
            }
        }));
        assert_eq!(shop.receive()["id"], 0);
        shop.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        shop
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("JSON");
        line.push(b'\n');
        self.stdin.write_all(&line).expect("the server reads");
    }

    fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("the server writes");
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line:?}"))
    }

    /// `place_order` under `request_id`: its result.
    fn place_order(&mut self, request_id: &str) -> Value {
        let order = json!({
            "lines": [{ "product_id": "sku-001", "quantity": 1 }],
            "ship_to": {
                "name": "Ada Lovelace", "street": "12 St James's Square",
                "city": "London", "postal_code": "SW1Y 4JH", "country": "GB"
            }
        });
        self.call("place_order", order, request_id)
    }

    /// `tool` with `arguments` under `request_id`: its result.
    fn call(&mut self, tool: &str, arguments: Value, request_id: &str) -> Value {
        self.send(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": arguments,
                "_meta": { "carmy/request_id": request_id }
            }
        }));
        let answer = self.receive();
        assert_eq!(answer["id"], 1, "{answer}");
        answer["result"].clone()
    }

    /// SIGKILL: the store gets no chance to say goodbye.
    fn kill_9(mut self) {
        self.child.kill().expect("the shop is killed");
        self.child.wait().expect("the shop is reaped");
    }
}

fn status(result: &Value) -> &str {
    result["_meta"]["carmy/status"].as_str().unwrap_or_default()
}

fn execution_id(result: &Value) -> &str {
    result["_meta"]["carmy/execution_id"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn by_default_a_write_is_replayed_after_kill_9_from_the_data_directory() {
    let data = Scratch::new("default");
    let mut shop = Shop::start(&[], &data.0, None);
    let placed = shop.place_order("checkout-1");
    assert_eq!(status(&placed), "succeeded", "{placed}");
    shop.kill_9();
    assert!(
        data.0.join("carmy/shop/store.sqlite").is_file(),
        "the default store is in $XDG_DATA_HOME/carmy/shop"
    );

    let mut shop = Shop::start(&[], &data.0, None);
    let retry = shop.place_order("checkout-1");
    assert_eq!(status(&retry), "replayed", "{retry}");
    assert_eq!(execution_id(&retry), execution_id(&placed));
    assert_eq!(retry["structuredContent"], placed["structuredContent"]);
    shop.kill_9();
}

#[test]
fn store_memory_forgets_with_the_process_and_writes_no_file() {
    let data = Scratch::new("memory");
    for round in 0..2 {
        let mut shop = Shop::start(&["--store", "memory"], &data.0, None);
        let placed = shop.place_order("checkout-1");
        assert_eq!(status(&placed), "succeeded", "round {round}: {placed}");
        shop.kill_9();
    }
    assert!(!data.0.join("carmy").exists());
}

#[test]
fn a_path_from_the_flag_or_the_environment_and_the_flag_wins() {
    let data = Scratch::new("path");
    let file = data.0.join("orders.sqlite");
    let mut shop = Shop::start(&[], &data.0, Some(file.to_str().expect("UTF-8")));
    let placed = shop.place_order("checkout-1");
    shop.kill_9();
    assert!(file.is_file());
    assert!(!data.0.join("carmy").exists(), "CARMY_STORE names the file");

    // The flag beats the environment: the same file, replayed.
    let mut shop = Shop::start(
        &["--store", file.to_str().expect("UTF-8")],
        &data.0,
        Some("memory"),
    );
    let retry = shop.place_order("checkout-1");
    assert_eq!(status(&retry), "replayed", "{retry}");
    assert_eq!(execution_id(&retry), execution_id(&placed));
    shop.kill_9();
}

#[test]
fn a_store_whose_directory_is_not_there_is_a_usage_error() {
    let data = Scratch::new("missing");
    let missing = data.0.join("gone").join("store.sqlite");
    let output = Command::new(env!("CARGO_BIN_EXE_shop"))
        .args(["mcp", "--store"])
        .arg(&missing)
        .env("XDG_DATA_HOME", &data.0)
        .stdin(Stdio::null())
        .output()
        .expect("the shop binary starts");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--store") && stderr.contains("gone"),
        "{stderr}"
    );

    // A file that is not a store is refused too, before anything is served.
    let foreign = data.0.join("notes.txt");
    std::fs::write(&foreign, "not a database, not at all, not even close").expect("a file");
    let output = Command::new(env!("CARGO_BIN_EXE_shop"))
        .args(["mcp", "--store"])
        .arg(&foreign)
        .stdin(Stdio::null())
        .output()
        .expect("the shop binary starts");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--store") && stderr.contains("notes.txt"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
}

#[cfg(unix)]
#[test]
fn the_store_s_files_are_the_user_s_alone_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let data = Scratch::new("private");
    let file = data.0.join("orders.sqlite");
    // Under this umask a file is created readable and writable by everyone, unless its creator
    // says otherwise.
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("umask 000 && exec \"$0\" mcp --store \"$1\"")
        .arg(env!("CARGO_BIN_EXE_shop"))
        .arg(&file);
    let mut shop = Shop::spawn(command, &data.0);
    // A write: the file's write-ahead log and its shared memory are there while it serves.
    let placed = shop.place_order("checkout-1");
    assert_eq!(status(&placed), "succeeded", "{placed}");
    for suffix in ["", "-wal", "-shm"] {
        let path = PathBuf::from(format!("{}{suffix}", file.display()));
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "{}: {:o}",
            path.display(),
            mode & 0o777
        );
    }
    shop.kill_9();
}

#[test]
fn the_configuration_bounds_request_ids_and_only_writes_take_one() {
    for store in ["file", "memory"] {
        let data = Scratch::new(&format!("bounds-{store}"));
        let config = data.0.join("shop.toml");
        std::fs::write(&config, "[request_ids]\nmax_per_principal = 2\n").expect("a config");
        let file = data.0.join("store.sqlite");
        let store_flag = match store {
            "file" => file.to_str().expect("UTF-8"),
            _ => "memory",
        };
        let config = config.to_str().expect("UTF-8");
        let mut shop = Shop::start(&["--config", config, "--store", store_flag], &data.0, None);

        // Reads under a fresh request id each, past the bound: every one runs.
        for n in 0..5 {
            let found = shop.call(
                "search_products",
                json!({ "query": "mouse" }),
                &format!("search-{n}"),
            );
            assert_eq!(found["isError"], false, "{store}: {found}");
            assert_eq!(status(&found), "succeeded", "{store}: {found}");
        }
        // Two writes fill the principal's share; the third new id is refused, retryably.
        for id in ["w-1", "w-2"] {
            let placed = shop.place_order(id);
            assert_eq!(status(&placed), "succeeded", "{store}: {placed}");
        }
        let refused = shop.place_order("w-3");
        assert_eq!(refused["isError"], true, "{store}: {refused}");
        let error = &refused["_meta"]["carmy/error"];
        assert_eq!(error["code"], "CAPACITY", "{store}: {refused}");
        assert_eq!(error["retryable"], true, "{store}: {refused}");
        // What it holds is kept, and a read under yet another id still runs.
        assert_eq!(status(&shop.place_order("w-1")), "replayed", "{store}");
        let found = shop.call("get_product", json!({ "id": "sku-001" }), "after-the-bound");
        assert_eq!(status(&found), "succeeded", "{store}: {found}");
        shop.kill_9();
        assert_eq!(file.is_file(), store == "file");
    }
}
