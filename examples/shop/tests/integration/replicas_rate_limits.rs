//! A rate limit held across `shop http --stateless` replicas on one store: three replicas, a
//! limit of 5 calls a minute (burst 5) by configuration, 15 calls of `search_products` spread
//! round robin over them: 5 run, 10 are refused `RATE_LIMITED`, whichever replica they reach.
//!
//! The servers are real (tests/servers starts them); without them installed the tests skip,
//! unless `CARMY_TEST_SERVERS=required`.

use crate::common;

use std::path::PathBuf;

use common::HttpShop;
use serde_json::{Value, json};
use test_servers::{Postgres, Redis};

const ALICE: &str = "alice-token-0123456789abcdef";
/// A key, in base64: `openssl rand -base64 32` makes such.
const KEY: &str = "k1 cmF0ZS1saW1pdC1yZXBsaWNhcy1rZXktYXQtbGVhc3QtMzI=";

/// The limit, as an operator configures it.
const LIMIT: [(&str, &str); 2] = [
    ("CARMY_TOOL_SETTINGS__RATE_LIMIT__REQUESTS_PER_MINUTE", "5"),
    ("CARMY_TOOL_SETTINGS__RATE_LIMIT__BURST_SIZE", "5"),
];

/// A key file of one key, readable by this user alone, removed when dropped.
struct KeyFile(PathBuf);

impl KeyFile {
    fn new() -> Self {
        use std::os::unix::fs::PermissionsExt;
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "shop-rate-keys-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::write(&path, format!("{KEY}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        Self(path)
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A `tools/call` of `search_products` by alice on `shop`: the JSON-RPC answer.
fn search(shop: &HttpShop) -> Value {
    let message = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": { "name": "search_products", "arguments": { "query": "", "limit": 5 } }
    });
    let (status, answer) = shop.client(ALICE).post(&message);
    assert_eq!(status, 200, "{answer}");
    answer
}

fn fifteen_calls_over_three_replicas(store: &str) {
    let keys = KeyFile::new();
    let replicas: Vec<HttpShop> = (0..3)
        .map(|_| {
            HttpShop::serve_with_env(
                &[(ALICE, "alice")],
                &[
                    "--stateless",
                    "--store",
                    store,
                    "--state-keys-file",
                    keys.0.to_str().unwrap(),
                ],
                None,
                &LIMIT,
            )
        })
        .collect();
    let (mut succeeded, mut limited) = (0, 0);
    for i in 0..15 {
        let answer = search(&replicas[i % 3]);
        let result = &answer["result"];
        if result["isError"] == false {
            succeeded += 1;
            continue;
        }
        let error = &result["_meta"]["carmy/error"];
        assert_eq!(error["code"], "RATE_LIMITED", "{answer}");
        assert!(
            error["details"]["retry_after_ms"].as_u64().unwrap() > 0,
            "{answer}"
        );
        limited += 1;
    }
    assert_eq!((succeeded, limited), (5, 10));
}

#[test]
fn three_replicas_on_postgres_share_one_rate_limit() {
    let Some(postgres) = Postgres::shared() else {
        return;
    };
    fifteen_calls_over_three_replicas(&postgres.create_database("replicas_rate_limits"));
}

#[test]
fn three_replicas_on_redis_share_one_rate_limit() {
    let Some(redis) = Redis::start() else {
        return;
    };
    fifteen_calls_over_three_replicas(&redis.url());
}
