//! Confirmation through the client (`shop mcp --confirm-via-client`) under the attacks of issue
//! 14, replayed against the real binary over stdio:
//!
//! - the question names the tool's declared fields, the required ones first, whatever keys are
//!   added, and says what it left out (row 7).
//!
//! `SHOP_BIN=/path/to/an/older/shop` runs them against another build.

mod common;

use common::{ConfirmShop, PATIENCE, Wire};
use serde_json::{Value, json};

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
