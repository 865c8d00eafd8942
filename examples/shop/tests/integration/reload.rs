//! SIGHUP on `shop mcp --config FILE`: the file read again and `tool_settings.disabled` applied
//! while serving. The client hears `notifications/tools/list_changed`, `tools/list` leaves the
//! tool out, and a call of it is refused as a call of an unknown tool (`-32602`), until the
//! next SIGHUP enables it again. What cannot change live is reported and kept, and a file that
//! no longer loads changes nothing.

use crate::common;

use std::path::{Path, PathBuf};

use common::{PATIENCE, RawShop};
use serde_json::{Value, json};

/// The shop's config file, in a directory of its own, with its log file beside it.
struct Config(PathBuf);

impl Config {
    /// A file of `text` and the log's `[logging]` section.
    fn new(text: &str) -> Self {
        let dir = common::temp_dir("reload");
        let config = Self(dir.join("shop.toml"));
        config.write(text);
        config
    }

    fn write(&self, text: &str) {
        let log = self.log();
        let text = format!("{text}\n[logging]\nfile = {log:?}\nlevel = \"info\"\n");
        std::fs::write(&self.0, text).expect("the config file");
    }

    fn log(&self) -> PathBuf {
        self.0.with_file_name("shop.log")
    }

    /// Waits until the log says `needle`, up to [`PATIENCE`].
    fn wait_for_log(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let log = std::fs::read_to_string(self.log()).unwrap_or_default();
            if log.contains(needle) {
                return log;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the log never said {needle:?}: {log}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn hang_up(shop: &RawShop) {
    let status = std::process::Command::new("kill")
        .args(["-HUP", &shop.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// The next message that is not a log line, within [`PATIENCE`].
fn next(shop: &mut RawShop) -> Value {
    loop {
        let message = shop.receive();
        if message["method"] != "notifications/message" {
            return message;
        }
    }
}

fn tool_names(shop: &mut RawShop, id: u64) -> Vec<String> {
    shop.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }));
    let answer = next(shop);
    assert_eq!(answer["id"], id, "{answer}");
    answer["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name").to_owned())
        .collect()
}

fn send_receipt(shop: &mut RawShop, id: u64) -> Value {
    shop.send(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "send_receipt",
            "arguments": { "order_id": "ord-none", "email": "a@example.com" }
        }
    }));
    let answer = next(shop);
    assert_eq!(answer["id"], id, "{answer}");
    answer
}

#[test]
fn sighup_disables_a_tool_and_the_next_enables_it_again() {
    let config = Config::new("[tool_settings]\ndisabled = []\n");
    let mut shop = RawShop::start(&["--config", config.path().to_str().unwrap()], &[]);
    shop.initialize(json!({}));
    assert!(tool_names(&mut shop, 1).contains(&"send_receipt".to_owned()));

    config.write("[tool_settings]\ndisabled = [\"send_receipt\"]\n");
    hang_up(&shop);
    let told = next(&mut shop);
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
    let names = tool_names(&mut shop, 2);
    assert!(!names.contains(&"send_receipt".to_owned()), "{names:?}");
    assert!(names.contains(&"search_products".to_owned()), "{names:?}");
    let refused = send_receipt(&mut shop, 3);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["error"]["code"], "TOOL_NOT_FOUND");

    // A file that no longer loads changes nothing; one that changes what cannot change live
    // has that reported and kept.
    config.write("[tool_settings]\ndisabled = [\"effect:loud\"]\n");
    hang_up(&shop);
    let log = config.wait_for_log("the configuration does not load");
    assert!(log.contains("effect:loud"), "{log}");
    config.write("[server]\nport = 9\n");
    hang_up(&shop);
    let told = next(&mut shop);
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
    assert!(tool_names(&mut shop, 4).contains(&"send_receipt".to_owned()));
    let answered = send_receipt(&mut shop, 5);
    assert!(answered.get("result").is_some(), "{answered}");
    config.wait_for_log("`server.port` changed, but cannot change while serving");
}

#[test]
fn a_disabled_tool_in_the_file_is_never_served() {
    let config = Config::new("[tool_settings]\ndisabled = [\"send_*\"]\n");
    let mut shop = RawShop::start(&["--config", config.path().to_str().unwrap()], &[]);
    shop.initialize(json!({}));
    assert!(!tool_names(&mut shop, 1).contains(&"send_receipt".to_owned()));
    let refused = send_receipt(&mut shop, 2);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}
