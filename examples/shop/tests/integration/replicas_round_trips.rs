//! Round trips across `shop http --stateless --confirm-via-client` replicas on one store, as
//! a 2026-07-28 client behind a round-robin balancer makes them: its retry, carrying the sealed
//! `requestState`, reaches whichever replica is next.
//!
//! - A confirmation asked on one replica is answered on another, and the call runs there once;
//!   the same answer replayed on a third is refused, as on the first.
//! - A key rotated while a question waits for its user: the answer still opens.
//! - A replica on a shared store without shared keys does not start.
//!
//! The servers are real (tests/servers starts them); without them installed the tests skip,
//! unless `CARMY_TEST_SERVERS=required`.

use crate::common;

use std::path::{Path, PathBuf};

use common::{HttpShop, shop_bin};
use serde_json::{Value, json};
use test_servers::{Postgres, Redis};

const ALICE: &str = "alice-token-0123456789abcdef";
/// Two keys, in base64: `openssl rand -base64 32` makes such.
const OLD: &str = "old b2xkLXJlcXVlc3Qtc3RhdGUta2V5LWF0LWxlYXN0LTMyYg==";
const NEW: &str = "new bmV3LXJlcXVlc3Qtc3RhdGUta2V5LWF0LWxlYXN0LTMyYg==";

/// A key file of `lines`, readable by this user alone, removed when dropped.
struct KeyFile(PathBuf);

impl KeyFile {
    fn new(lines: &[&str]) -> Self {
        use std::os::unix::fs::PermissionsExt;
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "shop-state-keys-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::write(&path, lines.join("\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A replica on `store` sealing with `keys`.
fn replica(store: &str, keys: &KeyFile) -> HttpShop {
    HttpShop::serve(
        &[(ALICE, "alice")],
        &[
            "--stateless",
            "--confirm-via-client",
            "--store",
            store,
            "--state-keys-file",
            keys.path(),
        ],
        None,
    )
}

/// A 2026-07-28 `tools/call` of `tool` with `arguments` and `extra` params, from a client that
/// can put a form to its user: the JSON-RPC answer.
fn call(shop: &HttpShop, tool: &str, arguments: &Value, extra: Value) -> Value {
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    let mut params = json!({
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
            "io.modelcontextprotocol/clientInfo": { "name": "replica-test", "version": "1" }
        }
    });
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let (status, answer) = shop.client(ALICE).post_with(&headers, &message);
    assert_eq!(status, 200, "{answer}");
    answer
}

/// An order of alice's, placed on `shop`: its id.
fn place_order(shop: &HttpShop) -> String {
    let found = call(
        shop,
        "search_products",
        &json!({ "query": "", "limit": 50 }),
        json!({}),
    );
    let product = found["result"]["structuredContent"]["products"]
        .as_array()
        .unwrap()
        .iter()
        .find(|product| product["in_stock"] == true)
        .expect("a product in stock")["id"]
        .clone();
    let order = json!({
        "lines": [{ "product_id": product, "quantity": 1 }],
        "ship_to": {
            "name": "Ada Lovelace", "street": "12 St James's Square",
            "city": "London", "postal_code": "SW1Y 4JH", "country": "GB"
        }
    });
    let placed = call(shop, "place_order", &order, json!({}));
    placed["result"]["structuredContent"]["order_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{placed}"))
        .to_owned()
}

/// The user's approval, with the state that asked for it.
fn approved(state: &Value) -> Value {
    json!({
        "inputResponses": {
            "carmy/confirm": { "action": "accept", "content": { "approve": true } }
        },
        "requestState": state,
    })
}

/// The state of the confirmation `cancel_order` of `order` asks for on `shop`.
fn asked(shop: &HttpShop, order: &str) -> Value {
    let answer = call(
        shop,
        "cancel_order",
        &json!({ "order_id": order }),
        json!({}),
    );
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    let state = answer["result"]["requestState"].clone();
    assert!(state.is_string(), "{answer}");
    state
}

fn cancelled(answer: &Value) {
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["status"], "cancelled",
        "{answer}"
    );
}

fn answered_on_another_replica(store: &str) {
    let keys = KeyFile::new(&[NEW]);
    let (a, b, c) = (
        replica(store, &keys),
        replica(store, &keys),
        replica(store, &keys),
    );
    let order = place_order(&a);
    let state = asked(&a, &order);
    let cancel = json!({ "order_id": order });
    cancelled(&call(&b, "cancel_order", &cancel, approved(&state)));
    // The approval was used; on a third replica, as on the first, it is refused.
    for replica in [&c, &a] {
        let replayed = call(replica, "cancel_order", &cancel, approved(&state));
        assert_eq!(
            replayed["result"]["_meta"]["carmy/error"]["code"], "CONFIRMATION_INVALID",
            "{replayed}"
        );
    }
}

#[test]
fn a_confirmation_is_answered_on_another_replica_and_used_once_on_postgres() {
    let Some(postgres) = Postgres::shared() else {
        return;
    };
    answered_on_another_replica(&postgres.create_database("round_trips_answered"));
}

#[test]
fn a_confirmation_is_answered_on_another_replica_and_used_once_on_redis() {
    let Some(redis) = Redis::start() else {
        return;
    };
    answered_on_another_replica(&redis.url());
}

#[test]
fn a_key_rotated_while_the_user_decides_still_opens_the_answer() {
    let Some(postgres) = Postgres::shared() else {
        return;
    };
    let store = postgres.create_database("round_trips_rotated");
    // Before the rotation, and its first step: every replica holds both keys, the old first.
    let old_first = KeyFile::new(&[OLD, NEW]);
    let before = replica(&store, &old_first);
    let order = place_order(&before);
    let state = asked(&before, &order);
    // The second step (the new key first) reaches the replica the answer goes to.
    let new_first = KeyFile::new(&[NEW, OLD]);
    let promoted = replica(&store, &new_first);
    let cancel = json!({ "order_id": order });
    cancelled(&call(&promoted, "cancel_order", &cancel, approved(&state)));
    // A question asked now is sealed with the new key, which a replica of the first step opens.
    let second = place_order(&promoted);
    let state = asked(&promoted, &second);
    let second = json!({ "order_id": second });
    cancelled(&call(&before, "cancel_order", &second, approved(&state)));
    // Once the old key is retired, what it sealed is refused as altered.
    let retired = replica(&store, &KeyFile::new(&[NEW]));
    let third = place_order(&before);
    let state = asked(&before, &third);
    let refused = call(
        &retired,
        "cancel_order",
        &json!({ "order_id": third }),
        approved(&state),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

/// `shop http` on `store` with no key file: its exit status and what it said.
fn start_without_keys(store: &str) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!("shop-no-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("{ALICE} alice\n")).unwrap();
    set_private(&tokens);
    let output = std::process::Command::new(shop_bin())
        .args(["http", "--addr", "127.0.0.1:0", "--store", store])
        .arg("--token-file")
        .arg(&tokens)
        .env_remove("CARMY_STORE")
        .output()
        .expect("the shop binary runs");
    let _ = std::fs::remove_dir_all(&dir);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn set_private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn a_replica_on_a_shared_store_does_not_start_without_shared_keys() {
    // Refused before the store is reached: nothing listens on port 1.
    for store in [
        "postgres://shop:s3cret@127.0.0.1:1/shop",
        "redis://127.0.0.1:1/0",
    ] {
        let (status, said) = start_without_keys(store);
        assert_eq!(status, Some(2), "{said}");
        assert!(said.contains("--state-keys-file"), "{said}");
        assert!(!said.contains("s3cret"), "{said}");
    }
    // A key file that other users may read is refused, naming the fix.
    let keys = KeyFile::new(&[NEW]);
    std::fs::set_permissions(&keys.0, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let output = std::process::Command::new(shop_bin())
        .args(["http", "--addr", "127.0.0.1:0", "--allow-unauthenticated"])
        .args(["--store", "memory", "--state-keys-file", keys.path()])
        .output()
        .expect("the shop binary runs");
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("chmod 600"), "{said}");
}
