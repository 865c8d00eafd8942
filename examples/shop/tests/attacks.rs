//! The shop's release surface under the outside attack of issue 14, replayed against the real
//! binary over stdio: what a hostile client sends that the server would keep (tool names,
//! request ids, outcomes that echo arguments) stays bounded in bytes, and what a schema
//! publishes is enforced. Memory is read from `/proc` while the attack runs; the figures are
//! printed (`--nocapture`) for the record.

mod common;

use common::{StdioShop, error_code};
use serde_json::json;

/// MiB of resident memory the server may gain under an attack that sends 240 MB: what a few
/// requests in flight and the allocator's slack take, and far from what keeping any of it would.
const GROWTH_MIB: u64 = 48;

fn report(attack: &str, before: (u64, u64), after: (u64, u64)) {
    eprintln!(
        "{attack}: VmRSS {} -> {} KiB, VmHWM {} -> {} KiB",
        before.0, after.0, before.1, after.1
    );
    assert!(
        after.0 < before.0 + GROWTH_MIB * 1024,
        "{attack}: resident memory grew from {} to {} KiB",
        before.0,
        after.0
    );
}

#[test]
fn calls_to_unknown_tools_with_huge_names_keep_nothing_of_them() {
    let mut shop = StdioShop::start(&[]);
    let before = shop.memory_kib();
    let name = "x".repeat(4_000_000);
    for id in 1..=60 {
        let answer = shop.call(id, &name, json!({}), None);
        // A JSON-RPC error whose echo of the name is cut short.
        assert_eq!(
            answer["error"]["code"],
            -32602,
            "{}",
            &answer.to_string()[..200]
        );
        assert!(
            answer.to_string().len() < 2_000,
            "the answer echoes the name"
        );
    }
    report(
        "60 unknown tools named with 4 MB",
        before,
        shop.memory_kib(),
    );
    // The server still serves.
    let answer = shop.call(61, "search_products", json!({ "query": "mouse" }), None);
    assert_eq!(answer["result"]["structuredContent"]["total"], 4);
}

#[test]
fn huge_request_ids_are_refused_at_the_door() {
    let mut shop = StdioShop::start(&[]);
    let before = shop.memory_kib();
    for id in 1..=60 {
        let request_id = format!("{id}-{}", "r".repeat(4_000_000));
        let answer = shop.call(
            id,
            "search_products",
            json!({ "query": "mouse" }),
            Some(json!({ "carmy/request_id": request_id })),
        );
        assert_eq!(error_code(&answer), "INVALID_REQUEST_ID");
        assert!(answer.to_string().len() < 2_000);
    }
    report("60 calls with 4 MB request ids", before, shop.memory_kib());
    // An id of the documented length is fine.
    let answer = shop.call(
        61,
        "search_products",
        json!({ "query": "mouse" }),
        Some(json!({ "carmy/request_id": "r".repeat(256) })),
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");
}

#[test]
fn outcomes_that_echo_huge_arguments_are_not_kept_for_replay() {
    let mut shop = StdioShop::start(&[]);
    let before = shop.memory_kib();
    // A write (only writes keep their outcome for replay) whose error echoes its argument.
    let receipt = json!({ "order_id": "o".repeat(2_000_000), "email": "ada@example.com" });
    for id in 1..=60 {
        let answer = shop.call(
            id,
            "send_receipt",
            receipt.clone(),
            Some(json!({ "carmy/request_id": format!("receipt-{id}") })),
        );
        assert_eq!(error_code(&answer), "ORDER_NOT_FOUND");
    }
    report("60 recorded errors echoing 2 MB", before, shop.memory_kib());
    // The retry of one of them does not run again: it is told the outcome was not kept.
    let answer = shop.call(
        61,
        "send_receipt",
        receipt,
        Some(json!({ "carmy/request_id": "receipt-1" })),
    );
    assert_eq!(error_code(&answer), "OUTCOME_NOT_KEPT");
    assert_eq!(answer["result"]["_meta"]["carmy/status"], "replayed");
}

#[test]
fn a_published_email_format_is_enforced() {
    let mut shop = StdioShop::start(&[]);
    for (id, email) in (1..).zip(["not-an-email", "", "<script>@x"]) {
        let answer = shop.call(
            id,
            "send_receipt",
            json!({ "order_id": "ord-1001", "email": email }),
            None,
        );
        assert_eq!(error_code(&answer), "INVALID_ARGUMENTS", "{email:?}");
        let problems = &answer["result"]["_meta"]["carmy/error"]["details"]["errors"];
        assert_eq!(problems[0]["path"], "/email", "{answer}");
    }
    // A well-formed address passes validation (and finds no such order).
    let answer = shop.call(
        9,
        "send_receipt",
        json!({ "order_id": "ord-1001", "email": "ada@example.com" }),
        None,
    );
    assert_eq!(error_code(&answer), "ORDER_NOT_FOUND");
}

mod over_http {
    use super::common::HttpShop;
    use serde_json::json;

    const ALICE: &str = "alice-token-0123456789abcdef";
    const MALLORY: &str = "mallory-token-0123456789abcdef";

    fn order() -> serde_json::Value {
        json!({
            "lines": [{ "product_id": "sku-001", "quantity": 1 }],
            "ship_to": {
                "name": "Ada Lovelace", "street": "12 St James's Square", "city": "London",
                "postal_code": "SW1Y 4JH", "country": "GB"
            }
        })
    }

    #[test]
    fn another_principals_flood_never_makes_a_write_run_twice() {
        let shop = HttpShop::start(&[(ALICE, "alice"), (MALLORY, "mallory")]);
        let mut alice = shop.client(ALICE);
        let placed = alice.call("place_order", order(), "order-1");
        let order_id = placed["result"]["structuredContent"]["order_id"].clone();
        assert!(order_id.is_string(), "{placed}");

        // Mallory makes 10,000 cheap writes, each under a request id of her own (only writes
        // keep theirs): a receipt for an order that is not there.
        let mut mallory = shop.client(MALLORY);
        for n in 0..10_000 {
            let answer = mallory.call(
                "send_receipt",
                json!({ "order_id": format!("ord-m-{n}"), "email": "m@example.com" }),
                &format!("m-{n}"),
            );
            assert!(answer["result"].is_object(), "{answer}");
        }

        // Alice's retry of her finished write is a replay, and there is still one order.
        let retry = alice.call("place_order", order(), "order-1");
        assert_eq!(
            retry["result"]["_meta"]["carmy/status"], "replayed",
            "{retry}"
        );
        assert_eq!(retry["result"]["structuredContent"]["order_id"], order_id);
        let orders = alice.call("list_orders", json!({}), "list-1");
        let orders = orders["result"]["structuredContent"]["orders"]
            .as_array()
            .expect("orders")
            .len();
        assert_eq!(orders, 1, "the write ran twice");
    }
}
