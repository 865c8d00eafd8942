//! The `shop` binary's command line, run as a user runs it: `Cli::main` picks the tokio runtime
//! per subcommand, so each kind of subcommand is started here as a process.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Output, Stdio},
};

use serde_json::{Value, json};

fn shop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shop"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("the shop binary starts")
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not JSON ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn call_runs_a_tool_in_process() {
    let output = shop(&["call", "search_products", r#"{"query": "MOUSE"}"#]);
    assert!(output.status.success(), "{output:?}");
    let outcome = stdout_json(&output);
    assert_eq!(outcome["status"], "succeeded", "{outcome:#}");
    assert_eq!(outcome["output"]["total"], 4, "{outcome:#}");
}

#[test]
fn a_refused_call_and_bad_usage_have_their_exit_codes() {
    let refused = shop(&["call", "cancel_order", r#"{"order_id": "ord-1001"}"#]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert_eq!(
        stdout_json(&refused)["error"]["code"],
        "CONFIRMATION_REQUIRED"
    );
    assert_eq!(shop(&["serve-everything"]).status.code(), Some(2));
    assert_eq!(
        shop(&["call", "search_products", "{"]).status.code(),
        Some(2)
    );
    assert_eq!(shop(&["--help"]).status.code(), Some(0));
}

#[test]
fn tools_lists_the_catalog() {
    let output = shop(&["tools", "--json"]);
    assert!(output.status.success(), "{output:?}");
    let listing = stdout_json(&output);
    let text = listing.to_string();
    for tool in ["search_products", "place_order", "cancel_order"] {
        assert!(text.contains(tool), "{tool} missing from {listing:#}");
    }
}

#[test]
fn mcp_serves_stdio_until_the_client_hangs_up() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shop"))
        .arg("mcp")
        // Not the default file: tests run in parallel and again.
        .env("CARMY_STORE", "memory")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the shop binary starts");
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").expect("the server reads");
    };
    let mut receive = || {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the server writes");
        serde_json::from_str::<Value>(&line).expect("a JSON line")
    };
    send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "cli-test", "version": "1" }
        }
    }));
    assert_eq!(receive()["result"]["serverInfo"]["name"], "shop");
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    // Several calls in flight at once on the one thread, answered by id.
    for id in 2..6 {
        send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "search_products", "arguments": { "query": "mouse" } }
        }));
    }
    let mut ids = Vec::new();
    for _ in 2..6 {
        let answer = receive();
        assert_eq!(
            answer["result"]["structuredContent"]["total"], 4,
            "{answer}"
        );
        ids.push(answer["id"].as_i64().expect("an id"));
    }
    ids.sort_unstable();
    assert_eq!(ids, [2, 3, 4, 5]);
    drop(stdin);
    let status = child.wait().expect("the server exits");
    assert!(status.success(), "{status:?}");
}

/// The lines of `shop ARGS`'s stdout, which must succeed.
fn stdout_lines(args: &[&str]) -> Vec<String> {
    let output = shop(args);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The entry named `name` in a JSON listing.
fn named<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing
        .as_array()
        .and_then(|entries| entries.iter().find(|entry| entry["name"] == name))
        .unwrap_or_else(|| panic!("no `{name}` in {listing:#}"))
}

#[test]
fn resources_lists_the_resources_templates_and_served_files() {
    let listing = stdout_json(&shop(&["resources", "--json"]));
    let catalog = named(&listing, "catalog");
    assert_eq!(catalog["uri"], "shop://catalog", "{catalog:#}");
    assert_eq!(catalog["mime_type"], "application/json");
    assert_eq!(catalog["title"], "Catalog");
    let product = named(&listing, "product");
    assert_eq!(
        product["uri_template"], "shop://products/{id}",
        "{product:#}"
    );
    assert_eq!(product["input_schema"]["required"], json!(["id"]));
    assert_eq!(
        named(&listing, "order")["uri_template"],
        "shop://orders/{order_id}"
    );
    // The policy documents the binary serves from its directory.
    let files: Vec<&str> = listing
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["uri"].as_str())
        .filter(|uri| uri.starts_with("file://"))
        .collect();
    assert!(
        files
            .iter()
            .any(|uri| uri.ends_with("/policies/returns.md")),
        "{listing:#}"
    );

    let lines = stdout_lines(&["resources"]);
    assert!(lines[0].starts_with("RESOURCE"), "{lines:#?}");
    assert!(lines[0].contains("URI") && lines[0].contains("DESCRIPTION"));
    let product = lines
        .iter()
        .find(|line| line.starts_with("product "))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(product.contains("shop://products/{id}"), "{product}");
    assert!(product.contains("One product with the units in stock now."));
}

#[test]
fn prompts_lists_the_prompts_and_their_arguments() {
    let listing = stdout_json(&shop(&["prompts", "--json"]));
    let help = named(&listing, "order_help");
    assert_eq!(help["title"], "Help with an order", "{help:#}");
    let arguments: Vec<(&str, bool)> = help["arguments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|argument| {
            (
                argument["name"].as_str().unwrap_or_default(),
                argument["required"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(arguments, [("order_id", true), ("issue", false)]);

    let lines = stdout_lines(&["prompts"]);
    assert!(lines[0].starts_with("PROMPT"), "{lines:#?}");
    let help = lines
        .iter()
        .find(|line| line.starts_with("order_help "))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(help.contains("order_id, [issue]"), "{help}");
}

#[test]
fn schema_prints_a_resource_templates_or_a_prompts_input_schema() {
    let product = stdout_json(&shop(&["schema", "product"]));
    assert_eq!(product["name"], "product");
    assert_eq!(product["uri_template"], "shop://products/{id}");
    assert_eq!(product["input_schema"]["type"], "object", "{product:#}");
    assert_eq!(product["input_schema"]["required"], json!(["id"]));
    // A template may be named by its URI too.
    assert_eq!(
        stdout_json(&shop(&["schema", "shop://products/{id}"])),
        product
    );

    let help = stdout_json(&shop(&["schema", "order_help"]));
    assert_eq!(help["name"], "order_help");
    let properties = &help["input_schema"]["properties"];
    assert!(
        properties["order_id"].is_object() && properties["issue"].is_object(),
        "{help:#}"
    );

    // A tool's, as before.
    let order = stdout_json(&shop(&["schema", "place_order"]));
    assert!(order["input_schema"].is_object() && order["output_schema"].is_object());
}

#[test]
fn schema_of_an_unknown_name_lists_every_kind() {
    let unknown = shop(&["schema", "order"]);
    // `order` is a resource: found.
    assert!(unknown.status.success(), "{unknown:?}");
    let unknown = shop(&["schema", "refund_order"]);
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.starts_with("error: no tool, resource or prompt named `refund_order`"),
        "{stderr}"
    );
    for name in ["cancel_order", "product", "order_help"] {
        assert!(stderr.contains(name), "{name} missing from {stderr}");
    }
    let wrong_kind = shop(&["schema", "order_help", "--kind", "tool"]);
    assert_eq!(wrong_kind.status.code(), Some(2), "{wrong_kind:?}");
    let stderr = String::from_utf8_lossy(&wrong_kind.stderr);
    assert!(
        stderr.starts_with("error: no tool named `order_help`; the tools are:"),
        "{stderr}"
    );
}
