//! The real shop binary, driven as a hostile client would: `shop mcp` over stdio, line by line,
//! with its memory read from `/proc` while it is attacked.
#![allow(dead_code, unreachable_pub)]

mod confirm;
mod http;
mod raw;
mod stdio;

use serde_json::Value;

// Each test file uses some of them.
#[allow(unused_imports)]
pub use confirm::{ConfirmShop, Wire};
#[allow(unused_imports)]
pub use http::{HttpClient, HttpShop};
#[allow(unused_imports)]
pub use raw::{PATIENCE, RawShop};
#[allow(unused_imports)]
pub use stdio::StdioShop;

/// The shop binary under attack: this build's, or another's named by `SHOP_BIN` (a release
/// build, or an older one to see an attack succeed).
pub fn shop_bin() -> String {
    std::env::var("SHOP_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_shop").to_owned())
}

/// A fresh directory under the system's temporary one, named for `name`, this process and the
/// time: tests run in parallel and run again.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "shop-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("a clock")
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// The idempotency store of every shop started here: this process's memory. Tests run in
/// parallel and run again, so they must not share (and replay from) the default file.
pub(crate) const STORE: (&str, &str) = ("CARMY_STORE", "memory");

/// A process's resident memory now and at its peak, in KiB (`VmRSS`, `VmHWM` from `/proc`).
pub(crate) fn memory_kib(pid: u32) -> (u64, u64) {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's /proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or_else(|| panic!("{name} in /proc status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The `carmy/error` code of a tool error result.
pub fn error_code(answer: &Value) -> &str {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    answer["result"]["_meta"]["carmy/error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error code in {answer}"))
}
