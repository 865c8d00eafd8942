//! The shop run from a configuration file: `shop serve --config FILE` serving the transport the
//! file picks, `shop config` saying where each value came from, and a bad file refused, exit 2,
//! before anything starts.

use crate::common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use common::{HttpShop, shop_bin};
use serde_json::json;

const TOKEN: &str = "config-test-token-0123456789";

fn token_file(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("tokens");
    std::fs::write(&path, format!("{TOKEN} ops confirm:cancel_order\n")).expect("tokens");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

/// `shop ARGS` with no configuration in its environment but what the test gives.
fn shop(args: &[&str]) -> Command {
    let mut command = Command::new(shop_bin());
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("CARMY_CONFIG")
        .env_remove("CARMY_STORE")
        .stdin(Stdio::null());
    command
}

/// `shop serve --config CONFIG`, for a file that picks HTTP; `dir` goes with the shop.
fn serve_http(config: &Path, dir: PathBuf) -> HttpShop {
    let child = shop(&["serve", "--config", config.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the shop starts");
    HttpShop::listening(child, dir)
}

#[test]
fn serve_takes_its_transport_port_tokens_and_grants_from_the_file() {
    let dir = common::temp_dir("config-serve");
    let tokens = token_file(&dir);
    let config = dir.join("shop.yaml");
    std::fs::write(
        &config,
        format!(
            "store: memory\nserver:\n  transport: http\n  port: 0\n  stateless: true\n\
             security:\n  token_file: {}\n",
            tokens.display()
        ),
    )
    .expect("the configuration");
    let shop = serve_http(&config, dir);
    let mut client = shop.client(TOKEN);
    let (status, listed) = client.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["result"]["tools"].as_array().map(Vec::len), Some(9));
    let placed = client.call(
        "place_order",
        json!({
            "lines": [{"product_id": "sku-001", "quantity": 1}],
            "ship_to": {"name": "Ada", "street": "1 Main St", "city": "London",
                        "postal_code": "SW1Y 4JH", "country": "GB"}
        }),
        "config-order-1",
    );
    let order = &placed["result"]["structuredContent"];
    assert_eq!(order["placed_by"], "ops", "{placed}");
    // The token file's grant lets ops cancel without being asked.
    let cancelled = client.call(
        "cancel_order",
        json!({"order_id": order["order_id"]}),
        "config-cancel-1",
    );
    assert_eq!(
        cancelled["result"]["structuredContent"]["status"], "cancelled",
        "{cancelled}"
    );
    // Without the token, the file's token file is enforced.
    let (status, _) = shop.client("wrong-token-0123456789abc").post(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list"
    }));
    assert_eq!(status, 401);
}

#[test]
fn serve_without_a_configuration_speaks_stdio() {
    let mut child = shop(&["serve"])
        .env("CARMY_STORE", "memory")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the shop starts");
    use std::io::{BufRead, BufReader, Write};
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "config-test", "version": "1"}}})
    )
    .expect("send");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("an answer");
    let answer: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(answer["result"]["serverInfo"]["name"], "shop", "{answer}");
    drop(stdin);
    assert!(child.wait().expect("exits").success());
}

#[test]
fn config_says_where_each_value_came_from() {
    let dir = common::temp_dir("config-show");
    let config = dir.join("shop.toml");
    std::fs::write(&config, "[server]\nport = 9100\nname = \"shop-eu\"\n").expect("file");
    let output = shop(&["config", "--config", config.to_str().unwrap(), "-l", "info"])
        .env("CARMY_SERVER__HOST", "0.0.0.0")
        .output()
        .expect("shop config runs");
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let line = |start: &str| {
        text.lines()
            .find(|line| line.starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} in\n{text}"))
            .to_owned()
    };
    assert!(line("port = 9100").ends_with(&format!("# {}", config.display())));
    assert!(line("name = \"shop-eu\"").ends_with(&format!("# {}", config.display())));
    assert!(line("host = \"0.0.0.0\"").ends_with("# CARMY_SERVER__HOST"));
    assert!(line("level = \"info\"").ends_with("# --log-level"));
    assert!(line("transport = \"stdio\"").ends_with("# default"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_bad_file_is_refused_with_exit_2_before_anything_starts() {
    let dir = common::temp_dir("config-bad");
    let config = dir.join("shop.toml");
    std::fs::write(
        &config,
        "[server]\ntransport = \"http\"\nport = 0\nmax_sesions = 4\n",
    )
    .expect("file");
    let output = shop(&["serve", "--config", config.to_str().unwrap()])
        .output()
        .expect("shop serve runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!(
            "error: {}:4: server.max_sesions = 4: unknown key; [server] has",
            config.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("listening"), "{stderr}");

    // A bad value in the environment names the variable; the shortcut subcommands read it too.
    let output = shop(&["http", "--addr", "127.0.0.1:0"])
        .env("CARMY_SERVER__TIMEOUT_MS", "soon")
        .output()
        .expect("shop http runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: CARMY_SERVER__TIMEOUT_MS: server.timeout_ms = \"soon\":"),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_file_s_rate_limits_hold_per_tool_and_per_address() {
    let dir = common::temp_dir("config-rates");
    let tokens = token_file(&dir);
    let config = dir.join("shop.toml");
    std::fs::write(
        &config,
        format!(
            "store = \"memory\"\n\
             [server]\ntransport = \"http\"\nport = 0\nstateless = true\n\
             [security]\ntoken_file = \"{}\"\nrate_limit = {{ requests_per_minute = 60, burst_size = 6 }}\n\
             [tool_settings.rate_limit]\nrequests_per_minute = 60\nburst_size = 2\n",
            tokens.display()
        ),
    )
    .expect("the configuration");
    let shop = serve_http(&config, dir);
    let mut client = shop.client(TOKEN);
    let get = |client: &mut common::HttpClient, id: u64| {
        client.post(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "get_product", "arguments": { "id": "sku-001" } }
        }))
    };
    // Two calls of a tool at once per principal; the third is refused, and did not run.
    for id in 1..=2 {
        let (status, answer) = get(&mut client, id);
        assert_eq!(status, 200);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let (status, refused) = get(&mut client, 3);
    assert_eq!(status, 200);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let error = &refused["result"]["_meta"]["carmy/error"];
    assert_eq!(error["code"], "RATE_LIMITED", "{refused}");
    assert_eq!(error["retryable"], true);
    assert_eq!(error["details"]["tool"], "get_product");
    // Another tool has its own bucket.
    let (status, listed) = client.post(&json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": { "name": "search_products", "arguments": { "query": "mouse" } }
    }));
    assert_eq!(status, 200);
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    // The address's bucket held six requests: the fifth and sixth pass, the seventh is 429.
    for id in 5..=6 {
        let (status, _) = client.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        assert_eq!(status, 200);
    }
    let (status, answer) = client.post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}));
    assert_eq!(status, 429, "{answer}");
    assert_eq!(answer["error"]["data"]["error"]["code"], "RATE_LIMITED");
}

#[test]
fn a_burst_without_a_rate_is_refused() {
    let output = shop(&["serve"])
        .env("CARMY_TOOL_SETTINGS__RATE_LIMIT__BURST_SIZE", "5")
        .output()
        .expect("shop serve runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.trim_end(),
        "error: CARMY_TOOL_SETTINGS__RATE_LIMIT__BURST_SIZE: tool_settings.rate_limit.burst_size \
         = \"5\": a burst needs `requests_per_minute` too"
    );
}

#[test]
fn a_caller_sees_and_calls_only_the_tools_its_rules_allow() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::temp_dir("config-access");
    let tokens = dir.join("tokens");
    // The server's rules leave `send_receipt` out; the auditor's token narrows them to the
    // reads, and its `send_*` cannot widen them.
    std::fs::write(
        &tokens,
        format!("{TOKEN} ops\naudit-token-0123456789ab auditor allow:effect:read allow:send_*\n"),
    )
    .expect("tokens");
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let config = dir.join("shop.yaml");
    std::fs::write(
        &config,
        format!(
            "store: memory\nserver:\n  transport: http\n  port: 0\n  stateless: true\n\
             security:\n  token_file: {}\n\
             tool_settings:\n  allowed_tools: [\"*_order\", \"*_orders\", \"effect:read\", \"quote_delivery\"]\n",
            tokens.display()
        ),
    )
    .expect("the configuration");
    let shop = serve_http(&config, dir);
    let names = |client: &mut common::HttpClient| {
        let (status, listed) =
            client.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        assert_eq!(status, 200, "{listed}");
        let mut names: Vec<String> = listed["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|tool| tool["name"].as_str().expect("a name").to_owned())
            .collect();
        names.sort();
        names
    };
    let mut ops = shop.client(TOKEN);
    assert_eq!(
        names(&mut ops),
        [
            "cancel_order",
            "get_order",
            "get_product",
            "list_orders",
            "place_order",
            "quote_delivery",
            "sales_report",
            "search_products"
        ],
        "send_receipt is outside the server's rules"
    );
    let mut auditor = shop.client("audit-token-0123456789ab");
    assert_eq!(
        names(&mut auditor),
        [
            "get_order",
            "get_product",
            "list_orders",
            "sales_report",
            "search_products"
        ],
        "the token's reads, within the server's rules: send_* does not widen them"
    );
    let (status, refused) = auditor.post(&json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "place_order", "arguments": {} }
    }));
    assert_eq!(status, 200);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let error = &refused["result"]["_meta"]["carmy/error"];
    assert_eq!(error["code"], "TOOL_NOT_ALLOWED", "{refused}");
    assert_eq!(error["category"], "permission");
    let (_, receipt) = ops.post(&json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "send_receipt", "arguments": { "order_id": "ord-1", "email": "a@b.c" } }
    }));
    assert_eq!(
        receipt["result"]["_meta"]["carmy/error"]["code"], "TOOL_NOT_ALLOWED",
        "{receipt}"
    );
}

#[test]
fn a_bad_access_rule_is_refused_where_it_is_written() {
    let output = shop(&["serve"])
        .env(
            "CARMY_TOOL_SETTINGS__ALLOWED_TOOLS",
            "search_products, effect:reads",
        )
        .output()
        .expect("shop serve runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(
            "error: CARMY_TOOL_SETTINGS__ALLOWED_TOOLS: tool_settings.allowed_tools = \
             [\"search_products\", \"effect:reads\"]: `effect:reads`: unknown effect `reads`"
        ),
        "{stderr}"
    );
}

#[test]
fn a_section_written_twice_is_refused_not_served_without_its_tokens() {
    let dir = common::temp_dir("config-twice");
    let tokens = token_file(&dir);
    let config = dir.join("shop.json");
    // The second `security` used to replace the first: no token file, the grants for everyone.
    std::fs::write(
        &config,
        format!(
            "{{\n  \"store\": \"memory\",\n  \"security\": {{\"token_file\": {:?}}},\n  \
             \"security\": {{\"grants\": [\"confirm:cancel_order\"]}}\n}}\n",
            tokens.display().to_string()
        ),
    )
    .expect("the configuration");
    let output = shop(&["serve", "--config", config.to_str().unwrap()])
        .output()
        .expect("shop serve runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "error: {}:4: security: written twice; each key may appear once\n",
            config.display()
        )
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_variable_that_cannot_be_read_stops_the_server() {
    use std::os::unix::ffi::OsStringExt;
    // Skipped, it used to leave the server without its token file.
    let output = shop(&["serve"])
        .env("CARMY_STORE", "memory")
        .env(
            "CARMY_SECURITY__TOKEN_FILE",
            std::ffi::OsString::from_vec(b"/etc/shop/tok\xffens".to_vec()),
        )
        .output()
        .expect("shop serve runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: CARMY_SECURITY__TOKEN_FILE: not UTF-8, so it cannot be read; configuration \
         values are text\n"
    );
}

#[test]
fn an_alias_bomb_is_refused_within_bounded_memory() {
    let dir = common::temp_dir("config-bomb");
    let config = dir.join("shop.yaml");
    // 272 bytes that mean nine to the seventh strings.
    let mut text = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (name, previous) in [
        ("b", "a"),
        ("c", "b"),
        ("d", "c"),
        ("e", "d"),
        ("f", "e"),
        ("g", "f"),
    ] {
        let items = vec![format!("*{previous}"); 9].join(",");
        text.push_str(&format!("{name}: &{name} [{items}]\n"));
    }
    std::fs::write(&config, text).expect("the configuration");
    // The shell caps the address space of the shop it becomes: 2 GiB.
    let output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2097152 && exec \"$0\" config --config \"$1\"")
        .arg(shop_bin())
        .arg(&config)
        .env_remove("CARMY_CONFIG")
        .env_remove("CARMY_STORE")
        .stdin(Stdio::null())
        .output()
        .expect("shop config runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "error: {}:6: its aliases expand the file past 262144 bytes, the most a \
             configuration file may hold (CARMY_CONFIG_MAX_BYTES)\n",
            config.display()
        )
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn store_passwords_are_hidden_by_config_and_by_the_start_up_error() {
    for (store, password) in [
        ("postgres://shop:pa/ss@db.internal/shop", "pa/ss"),
        ("postgres://shop:pa#ss@db.internal/shop", "pa#ss"),
        ("postgres://shop:pa?ss@db.internal/shop", "pa?ss"),
        ("postgres://shop@db.internal/shop?password=s3cret", "s3cret"),
        ("redis://:pa/ss@cache.internal:6379/0", "pa/ss"),
    ] {
        for args in [&["config", "--store", store][..], &["config", "--json"][..]] {
            let output = shop(args)
                .env("CARMY_STORE", store)
                .output()
                .expect("shop config runs");
            assert!(output.status.success(), "{output:?}");
            let text = String::from_utf8_lossy(&output.stdout);
            assert!(!text.contains(password), "{text}");
            assert!(text.contains("***"), "{text}");
        }
    }
    // Nothing listens on port 1: the store cannot be opened, and the error names it.
    for (store, password) in [
        ("postgres://shop:pa/ss@127.0.0.1:1/shop", "pa/ss"),
        ("postgres://shop@127.0.0.1:1/shop?password=s3cret", "s3cret"),
        ("redis://:pa#ss@127.0.0.1:1/0", "pa#ss"),
    ] {
        let output = shop(&["mcp", "--store", store])
            .output()
            .expect("shop mcp runs");
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("error: --store "), "{stderr}");
        assert!(!stderr.contains(password), "{stderr}");
        assert!(stderr.contains("***"), "{stderr}");
    }
}
