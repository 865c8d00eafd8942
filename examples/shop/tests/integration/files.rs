//! The shop's documents as resources, over the real binary's stdio: its policies by default,
//! another directory with `--resource-root`, edits told to a subscriber, and a directory that
//! is not there refused before anything is served.

use crate::common;

use std::{process::Command, time::Duration};

use common::{PATIENCE, RawShop};
use serde_json::{Value, json};

fn request(shop: &mut RawShop, id: u64, method: &str, params: Value) -> Value {
    shop.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
    loop {
        let message = shop.receive();
        if message["id"] == id {
            return message;
        }
    }
}

/// The `file://` resources of `resources/list`, by name.
fn files(listing: &Value) -> Vec<(String, String)> {
    listing["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter(|resource| resource["uri"].as_str().unwrap().starts_with("file://"))
        .map(|resource| {
            let field = |name: &str| resource[name].as_str().unwrap().to_owned();
            (field("name"), field("uri"))
        })
        .collect()
}

#[test]
fn the_policies_are_served_by_default() {
    let mut shop = RawShop::start(&[], &[]);
    shop.initialize(json!({}));
    let listing = request(&mut shop, 1, "resources/list", json!({}));
    let root = std::fs::canonicalize(shop::POLICIES).unwrap();
    let uri = |name: &str| format!("file://{}/{name}", root.display());
    assert_eq!(
        files(&listing),
        ["privacy.md", "returns.md", "shipping.md"].map(|name| (name.to_owned(), uri(name)))
    );
    let read = request(
        &mut shop,
        2,
        "resources/read",
        json!({ "uri": uri("returns.md") }),
    );
    let content = &read["result"]["contents"][0];
    assert_eq!(content["mimeType"], "text/markdown");
    assert_eq!(
        content["text"].as_str().unwrap(),
        std::fs::read_to_string(root.join("returns.md")).unwrap()
    );
    // Outside the root: "resource not found", and nothing read.
    let outside = request(
        &mut shop,
        3,
        "resources/read",
        json!({ "uri": format!("file://{}/../src/lib.rs", root.display()) }),
    );
    assert_eq!(outside["error"]["code"], -32002, "{outside}");
}

#[test]
fn another_directory_is_served_and_its_edits_are_told() {
    let dir = common::temp_dir("files-root");
    std::fs::write(dir.join("faq.md"), "# FAQ\n").unwrap();
    let root = std::fs::canonicalize(&dir).unwrap();
    let faq = format!("file://{}/faq.md", root.display());
    let mut shop = RawShop::start(&["--resource-root", dir.to_str().unwrap()], &[]);
    shop.initialize(json!({}));
    let listing = request(&mut shop, 1, "resources/list", json!({}));
    assert_eq!(files(&listing), [("faq.md".to_owned(), faq.clone())]);
    let subscribed = request(&mut shop, 2, "resources/subscribe", json!({ "uri": faq }));
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    std::fs::write(dir.join("faq.md"), "# FAQ\n\nNew answers.\n").unwrap();
    let deadline = std::time::Instant::now() + PATIENCE;
    let updated = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = shop
            .receive_line(left.max(Duration::from_millis(1)))
            .expect("notifications/resources/updated in time");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "notifications/resources/updated" {
            break message;
        }
    };
    assert_eq!(updated["params"]["uri"], faq);
    let read = request(&mut shop, 3, "resources/read", json!({ "uri": faq }));
    assert_eq!(
        read["result"]["contents"][0]["text"],
        "# FAQ\n\nNew answers.\n"
    );
    drop(shop);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_resource_root_that_is_not_there_is_a_usage_error() {
    let missing = common::temp_dir("files-gone").join("missing");
    let output = Command::new(env!("CARGO_BIN_EXE_shop"))
        .args(["mcp", "--resource-root"])
        .arg(&missing)
        .env("CARMY_STORE", "memory")
        .output()
        .expect("the shop binary starts");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--resource-root") && stderr.contains("missing"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn a_restricted_caller_neither_reads_nor_follows_what_its_rules_leave_out() {
    let dir = common::temp_dir("files-ruled");
    std::fs::create_dir_all(dir.join("public")).unwrap();
    std::fs::create_dir_all(dir.join("private")).unwrap();
    std::fs::write(dir.join("public/faq.md"), "# FAQ\n").unwrap();
    std::fs::write(dir.join("private/plans.md"), "# Plans\n").unwrap();
    std::os::unix::fs::symlink("../private/plans.md", dir.join("public/plans.md")).unwrap();
    let root = std::fs::canonicalize(&dir).unwrap();
    let uri = |relative: &str| format!("file://{}/{relative}", root.display());
    let rules = format!("resource:{}", uri("public/*"));
    let mut shop = RawShop::start(
        &["--resource-root", dir.to_str().unwrap()],
        &[("CARMY_TOOL_SETTINGS__ALLOWED_TOOLS", &rules)],
    );
    shop.initialize(json!({}));
    let listing = request(&mut shop, 1, "resources/list", json!({}));
    // What its rules leave out is not listed; links never are.
    assert_eq!(
        files(&listing),
        [("public/faq.md".to_owned(), uri("public/faq.md"))]
    );
    let faq = request(
        &mut shop,
        2,
        "resources/subscribe",
        json!({ "uri": uri("public/faq.md") }),
    );
    assert_eq!(faq["result"], json!({}), "{faq}");
    let mut id = 3;
    for relative in ["private/plans.md", "public/plans.md", "private/gone.md"] {
        let read = request(
            &mut shop,
            id,
            "resources/read",
            json!({ "uri": uri(relative) }),
        );
        let subscribed = request(
            &mut shop,
            id + 1,
            "resources/subscribe",
            json!({ "uri": uri(relative) }),
        );
        id += 2;
        assert_eq!(
            read["error"]["data"]["error"]["code"], "RESOURCE_NOT_ALLOWED",
            "{read}"
        );
        assert_eq!(
            subscribed["error"], read["error"],
            "{relative}: {subscribed}"
        );
        assert!(!read.to_string().contains("# Plans"), "{read}");
    }
    drop(shop);
    std::fs::remove_dir_all(dir).unwrap();
}
