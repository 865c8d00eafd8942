//! Confirmation through the client (`shop mcp --confirm-via-client`) under the attacks of issue
//! 14, rows 7 and 9, replayed against the real binary over stdio:
//!
//! - the question names the tool's declared fields, the required ones first, whatever keys are
//!   added, and says what it left out (row 7);
//! - a flood of answered confirmations never makes the server refuse a genuine one (row 9).
//!
//! Memory is read from `/proc` while the attack runs; the figures are printed (`--nocapture`)
//! for the record. `SHOP_BIN=/path/to/an/older/shop` runs them against another build.

mod common;

use std::time::Instant;

use common::{ConfirmShop, PATIENCE, Wire};
use serde_json::{Value, json};

/// MiB of resident memory the server may gain under an attack: the allocator's slack, far from
/// what keeping what the attacker sends would take.
const GROWTH_MIB: u64 = 48;

fn report(attack: &str, before: (u64, u64), after: (u64, u64)) {
    eprintln!(
        "{attack}: VmRSS {} -> {} KiB, VmHWM {} -> {} KiB",
        before.0, after.0, before.1, after.1
    );
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

/// Places the session's first order, `ord-1001`.
fn place_order(shop: &mut ConfirmShop, id: u64) {
    let placed = shop.call(id, "place_order", order());
    assert_eq!(
        placed["result"]["structuredContent"]["order_id"], "ord-1001",
        "{placed}"
    );
}

fn order_status(shop: &mut ConfirmShop, id: u64) -> String {
    let answer = shop.call(id, "get_order", json!({ "order_id": "ord-1001" }));
    answer["result"]["structuredContent"]["status"]
        .as_str()
        .unwrap_or_else(|| panic!("no status in {answer}"))
        .to_owned()
}

/// The `carmy/error` of a tool error result.
fn agent_error(answer: &Value) -> &Value {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    &answer["result"]["_meta"]["carmy/error"]
}

fn excerpt(message: &Value) -> String {
    message.to_string().chars().take(400).collect()
}

/// The answer to the server's `elicitation/create` `request`.
fn elicit_answer(request: &Value, answer: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": request["id"], "result": answer })
}

fn decline() -> Value {
    json!({ "action": "decline" })
}

fn approve() -> Value {
    json!({ "action": "accept", "content": { "approve": true } })
}

// --- Row 7: the question names the target -----------------------------------------------------

/// `cancel_order` of `ord-1001`, a long reason, and 40 keys the tool does not declare, named to
/// sort before `order_id`, each long enough to fill a summary on its own.
fn crowded_cancel() -> Value {
    let mut arguments = json!({ "order_id": "ord-1001", "reason": "r".repeat(1_000) });
    for n in 0..40 {
        arguments[format!("a{n:02}")] = json!("x".repeat(100));
    }
    arguments
}

/// What the user is asked about [`crowded_cancel`]: the required target first, the declared
/// reason cut short, and a plain count of the keys left out.
fn crowded_question() -> String {
    format!(
        "Allow `cancel_order` (destructive) with {{order_id: \"ord-1001\", reason: \"{}…}}? \
         Not shown: 40 keys the tool does not declare.",
        "r".repeat(78)
    )
}

#[test]
fn legacy_the_question_names_the_declared_target_whatever_keys_are_added() {
    let mut shop = ConfirmShop::start(Wire::Legacy, &[]);
    place_order(&mut shop, 1);
    shop.send_call(2, "cancel_order", &crowded_cancel(), json!({}));
    let asked = shop
        .server_message("elicitation/create", PATIENCE)
        .expect("the user is asked");
    assert_eq!(
        asked["params"]["message"],
        crowded_question(),
        "{}",
        excerpt(&asked)
    );
    shop.send(&elicit_answer(&asked, decline()));
    assert_eq!(
        agent_error(&shop.answer(2))["code"],
        "CONFIRMATION_DECLINED"
    );
    assert_eq!(order_status(&mut shop, 3), "placed");
}

#[test]
fn modern_the_question_names_the_declared_target_whatever_keys_are_added() {
    let mut shop = ConfirmShop::start(Wire::Modern, &[]);
    place_order(&mut shop, 1);
    let first = shop.call(2, "cancel_order", crowded_cancel());
    assert_eq!(
        first["result"]["resultType"],
        "input_required",
        "{}",
        excerpt(&first)
    );
    let asked = &first["result"]["inputRequests"]["carmy/confirm"];
    assert_eq!(
        asked["params"]["message"],
        crowded_question(),
        "{}",
        excerpt(asked)
    );
    assert_eq!(order_status(&mut shop, 3), "placed");
}

// --- Row 9: the redeemed-confirmation table cannot be filled --------------------------------

#[test]
fn a_flood_of_declined_round_trips_does_not_refuse_a_genuine_approval() {
    let mut shop = ConfirmShop::start(Wire::Modern, &[]);
    place_order(&mut shop, 1);
    let target = json!({ "order_id": "ord-1001" });
    let before = shop.memory_kib();
    let started = Instant::now();

    // 10,000 round trips, each asked and declined, 250 at a time.
    let rounds: u64 = 10_000;
    let batch: u64 = 250;
    for start in (0..rounds).step_by(batch as usize) {
        let ids = (start..start + batch).map(|n| 100 + 2 * n);
        for id in ids.clone() {
            shop.send_call(id, "cancel_order", &target, json!({}));
        }
        let mut states = Vec::new();
        for id in ids.clone() {
            let first = shop.answer(id);
            assert_eq!(first["result"]["resultType"], "input_required", "{first}");
            states.push(first["result"]["requestState"].clone());
        }
        for (id, state) in ids.clone().zip(states) {
            let retry = json!({
                "inputResponses": { "carmy/confirm": decline() },
                "requestState": state,
            });
            shop.send_call(id + 1, "cancel_order", &target, retry);
        }
        for id in ids {
            let answer = shop.answer(id + 1);
            assert_eq!(
                agent_error(&answer)["code"],
                "CONFIRMATION_DECLINED",
                "round {}",
                (id - 100) / 2
            );
        }
    }
    let flooded = shop.memory_kib();
    report(
        &format!("{rounds} declined round trips in {:?}", started.elapsed()),
        before,
        flooded,
    );

    // The genuine question, approved: it runs.
    let first = shop.call(2, "cancel_order", target.clone());
    let state = first["result"]["requestState"].clone();
    assert!(state.is_string(), "{first}");
    let retry = json!({ "inputResponses": { "carmy/confirm": approve() }, "requestState": state });
    shop.send_call(3, "cancel_order", &target, retry);
    let answer = shop.answer(3);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["status"], "cancelled",
        "{answer}"
    );
    assert_eq!(order_status(&mut shop, 4), "cancelled");
    assert!(
        flooded.0 < before.0 + GROWTH_MIB * 1024,
        "resident memory grew from {} to {} KiB",
        before.0,
        flooded.0
    );
}
