//! The shop's release surface under the outside attacks of issues 14 and 33, replayed against
//! the real binary over stdio and HTTP: what a hostile client sends that the server would keep
//! (tool names, request ids, outcomes that echo arguments) or send back (orders) stays bounded
//! in bytes, what a schema publishes is enforced, an order is its placer's alone, and a
//! restricted token learns nothing its rules hide. Memory is read from `/proc` while the attack
//! runs; the figures are printed (`--nocapture`) for the record.

use crate::common;

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

/// An order of one unit of `product`, with every address field and the note as long as the
/// schema allows.
fn largest_order(product: &str) -> serde_json::Value {
    json!({
        "lines": [{ "product_id": product, "quantity": 1 }],
        "ship_to": {
            "name": "n".repeat(100), "street": "s".repeat(200), "city": "c".repeat(100),
            "postal_code": "p".repeat(16), "country": "GB"
        },
        "note": "é".repeat(500)
    })
}

#[test]
fn every_order_of_the_largest_allowed_kind_is_listed_in_bounded_pages() {
    let mut shop = StdioShop::start(&[]);
    let before = shop.memory_kib();
    // A megabyte of name is refused before anything runs.
    let mut huge = largest_order("sku-001");
    huge["ship_to"]["name"] = json!("n".repeat(1_000_000));
    let answer = shop.call(1, "place_order", huge, None);
    assert_eq!(error_code(&answer), "INVALID_ARGUMENTS");
    // The whole stock (5 units of each product in stock), one unit an order, with the largest
    // addresses allowed.
    let store = shop::Store::new();
    let in_stock = store.products().iter().filter(|product| product.in_stock);
    let mut id = 1;
    for product in in_stock {
        for _ in 0..5 {
            id += 1;
            let answer = shop.call(id, "place_order", largest_order(&product.id), None);
            assert_eq!(answer["result"]["isError"], false, "{answer}");
        }
    }
    let mut listed = 0;
    let mut cursor = None;
    loop {
        id += 1;
        let arguments = match &cursor {
            Some(cursor) => json!({ "cursor": cursor, "limit": 50 }),
            None => json!({ "limit": 50 }),
        };
        let answer = shop.call(id, "list_orders", arguments, None);
        let size = answer.to_string().len();
        assert!(size < 1 << 20, "a page of {size} bytes");
        let page = &answer["result"]["structuredContent"];
        listed += page["orders"].as_array().expect("orders").len();
        match page.get("next_cursor") {
            Some(next) => cursor = Some(next.clone()),
            None => break,
        }
    }
    assert_eq!(listed, 170);
    report(
        "170 orders of the largest kind, listed",
        before,
        shop.memory_kib(),
    );
}

#[test]
fn a_restricted_caller_gets_one_answer_for_subscribing_to_a_hidden_resource_and_a_missing_one() {
    // Held to the policy documents: the shop's own resources are hidden.
    let mut shop = common::RawShop::start(
        &[],
        &[("CARMY_TOOL_SETTINGS__ALLOWED_TOOLS", "resource:file://*")],
    );
    shop.initialize(json!({}));
    let mut subscribe = |uri: &str| {
        shop.send(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": { "uri": uri }
        }));
        shop.receive().to_string().replace(uri, "URI")
    };
    let hidden = subscribe("shop://catalog");
    assert_eq!(hidden, subscribe("shop://nothing"));
    assert!(hidden.contains("RESOURCE_NOT_ALLOWED"), "{hidden}");
}

mod over_http {
    use super::common::{HttpClient, HttpShop};
    use serde_json::{Value, json};

    const ALICE: &str = "alice-token-0123456789abcdef";
    const MALLORY: &str = "mallory-token-0123456789abcdef";
    /// Alice's token for a product page: it may read product resources and nothing else.
    const ALICE_PRODUCTS: &str = "alice-products-token-0123456789abcdef";
    /// A token that may call only the tools that read.
    const READER: &str = "reader-token-0123456789abcdef";

    /// `method` with `params`, answered over HTTP.
    fn request(client: &mut HttpClient, method: &str, params: Value) -> Value {
        let (_, body) = client.post(&json!({
            "jsonrpc": "2.0", "id": 1, "method": method, "params": params
        }));
        assert!(body.is_object(), "{method}: no JSON-RPC answer");
        body
    }

    /// What `client` gets of order `id` through each way there is to it: `get_order`,
    /// `list_orders`, `resources/read`, the `order_help` prompt and the completion of its
    /// `order_id`.
    fn ways_to(client: &mut HttpClient, id: &str) -> [Value; 5] {
        let call = |client: &mut HttpClient, name: &str, arguments: Value| {
            request(
                client,
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            )
        };
        [
            call(client, "get_order", json!({ "order_id": id })),
            call(client, "list_orders", json!({})),
            request(
                client,
                "resources/read",
                json!({ "uri": format!("shop://orders/{id}") }),
            ),
            request(
                client,
                "prompts/get",
                json!({ "name": "order_help", "arguments": { "order_id": id } }),
            ),
            request(
                client,
                "completion/complete",
                json!({
                    "ref": { "type": "ref/prompt", "name": "order_help" },
                    "argument": { "name": "order_id", "value": "ord-" }
                }),
            ),
        ]
    }

    #[test]
    fn an_order_is_its_placers_alone_through_every_way_to_it() {
        let shop = HttpShop::start(&[(ALICE, "alice"), (MALLORY, "mallory")]);
        let mut alice = shop.client(ALICE);
        let placed = alice.call("place_order", order(), "order-1");
        let id = placed["result"]["structuredContent"]["order_id"]
            .as_str()
            .expect("an order id")
            .to_owned();
        let [got, listed, read, prompt, completed] = ways_to(&mut alice, &id);
        assert_eq!(got["result"]["structuredContent"]["order_id"], id.as_str());
        assert_eq!(
            listed["result"]["structuredContent"]["orders"][0]["order_id"],
            id.as_str()
        );
        assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
        assert!(prompt["result"]["messages"].is_array(), "{prompt}");
        assert_eq!(completed["result"]["completion"]["values"], json!([id]));

        let mut mallory = shop.client(MALLORY);
        let answers = ways_to(&mut mallory, &id);
        for answer in &answers {
            // Nothing of the order: not its address, nor its id where an id is not echoed.
            assert!(!answer.to_string().contains("Lovelace"), "{answer}");
        }
        let [got, listed, read, prompt, completed] = answers;
        assert_eq!(
            got["result"]["_meta"]["carmy/error"]["code"], "ORDER_NOT_FOUND",
            "{got}"
        );
        assert_eq!(
            listed["result"]["structuredContent"]["orders"],
            json!([]),
            "{listed}"
        );
        assert_eq!(
            read["error"]["data"]["error"]["code"], "ORDER_NOT_FOUND",
            "{read}"
        );
        assert_eq!(prompt["error"]["code"], -32602, "{prompt}");
        assert_eq!(prompt["error"]["data"]["error"]["code"], "ORDER_NOT_FOUND");
        assert_eq!(
            completed["result"]["completion"]["values"],
            json!([]),
            "{completed}"
        );
    }

    #[test]
    fn a_token_allowed_only_product_resources_gets_no_order_through_a_prompt() {
        let shop = HttpShop::start(&[
            (ALICE, "alice"),
            (ALICE_PRODUCTS, "alice allow:resource:shop://products/*"),
        ]);
        let placed = shop.client(ALICE).call("place_order", order(), "order-1");
        let id = placed["result"]["structuredContent"]["order_id"]
            .as_str()
            .expect("an order id")
            .to_owned();
        let mut products = shop.client(ALICE_PRODUCTS);
        let [_, _, read, prompt, completed] = ways_to(&mut products, &id);
        assert_eq!(
            read["error"]["data"]["error"]["code"], "RESOURCE_NOT_ALLOWED",
            "{read}"
        );
        assert_eq!(prompt["error"]["code"], -32602, "{prompt}");
        assert_eq!(
            prompt["error"]["data"]["error"]["code"], "RESOURCE_NOT_ALLOWED",
            "{prompt}"
        );
        assert!(!prompt.to_string().contains("Lovelace"), "{prompt}");
        assert_eq!(
            completed["result"]["completion"]["values"],
            json!([]),
            "{completed}"
        );
        // The products it may read, it reads.
        let product = request(
            &mut products,
            "resources/read",
            json!({ "uri": "shop://products/sku-001" }),
        );
        assert!(product["result"]["contents"].is_array(), "{product}");
    }

    #[test]
    fn a_restricted_token_gets_one_answer_for_a_hidden_tool_and_a_missing_one() {
        let shop = HttpShop::start(&[(READER, "auditor allow:effect:read")]);
        let mut reader = shop.client(READER);
        let mut answer = |name: &str| {
            let mut answer = request(
                &mut reader,
                "tools/call",
                json!({ "name": name, "arguments": { "order_id": "ord-1001" } }),
            );
            // Each execution has an id of its own; nothing else may differ but the name.
            if let Some(meta) = answer["result"]["_meta"].as_object_mut() {
                meta.remove("carmy/execution_id");
            }
            answer.to_string().replace(name, "NAME")
        };
        let hidden = answer("cancel_order");
        assert_eq!(hidden, answer("cancel_orders"));
        assert_eq!(hidden, answer("drop_database"));
        assert!(hidden.contains("TOOL_NOT_ALLOWED"), "{hidden}");
    }

    fn order() -> Value {
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
