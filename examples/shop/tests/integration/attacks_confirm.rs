//! Confirmation through the client (`shop mcp --confirm-via-client`) under the attacks of issue
//! 14, rows 6, 7 and 9, replayed against the real binary over stdio:
//!
//! - a call waiting for the user has a deadline, and the calls that may wait at once are bounded
//!   in number and in the bytes of their arguments (row 6);
//! - the question names the tool's declared fields, the required ones first, whatever keys are
//!   added, and says what it left out (row 7);
//! - a flood of answered confirmations never makes the server refuse a genuine one (row 9).
//!
//! Memory is read from `/proc` while the attack runs; the figures are printed (`--nocapture`)
//! for the record. `SHOP_BIN=/path/to/an/older/shop` runs them against another build.

use crate::common;

use std::time::{Duration, Instant};

use common::{ConfirmShop, PATIENCE, Wire};
use serde_json::{Value, json};

/// MiB of resident memory the server may gain while calls wait for the user: what the calls
/// allowed to wait hold (16 MiB of arguments) and the allocator's slack.
const GROWTH_MIB: u64 = 48;

/// How long the runtime waits for the user's answer (`Limits::approval_timeout`, which the shop
/// leaves at its default).
const DEADLINE: Duration = Duration::from_secs(120);

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

// --- Row 6: a pending question has a deadline and holds little --------------------------------

/// About 4 MB on the wire (the line limit), about 64 MB once parsed: a number is a byte or two
/// of JSON and a 32-byte value in memory.
fn heavy_cancel() -> Value {
    json!({ "order_id": "ord-1001", "junk": vec![0; 1_990_000] })
}

#[test]
fn calls_waiting_for_the_user_are_bounded_in_number_and_bytes() {
    let mut shop = ConfirmShop::start(Wire::Legacy, &[]);
    place_order(&mut shop, 1);
    let before = shop.memory_kib();

    // Eight calls whose arguments take ~64 MB each once parsed, never answered: none may wait.
    let heavy = heavy_cancel();
    for id in 10..18 {
        shop.send_call(id, "cancel_order", &heavy, json!({}));
    }
    let answers: Vec<Option<Value>> = (10..18)
        .map(|id| shop.answer_within(id, Duration::from_secs(10)))
        .collect();
    let heavy_done = shop.memory_kib();
    report(
        "8 calls with 4 MB arguments (64 MB parsed)",
        before,
        heavy_done,
    );
    for answer in answers {
        let answer = answer.expect("a call too large to wait is answered at once");
        let error = agent_error(&answer);
        assert_eq!(
            error["code"],
            "CONFIRMATION_REQUIRED",
            "{}",
            excerpt(&answer)
        );
        assert_eq!(error["retryable"], false, "{error}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|message| message.contains("too large")),
            "{error}"
        );
    }

    // Six calls with 3 MB reasons: four wait (16 MiB of arguments), the others are refused
    // at once with a retryable CAPACITY.
    let reason = "r".repeat(3_000_000);
    for id in 20..26 {
        let arguments = json!({ "order_id": "ord-1001", "reason": reason });
        shop.send_call(id, "cancel_order", &arguments, json!({}));
    }
    let mut questions = Vec::new();
    while let Some(question) = shop.server_message("elicitation/create", Duration::from_secs(2)) {
        questions.push(question);
    }
    let (mut refusals, mut pending) = (Vec::new(), Vec::new());
    for id in 20..26 {
        match shop.answer_within(id, Duration::from_secs(2)) {
            Some(answer) => refusals.push(answer),
            None => pending.push(id),
        }
    }
    let waiting = shop.memory_kib();
    report(
        &format!("{} calls waiting with 3 MB arguments", questions.len()),
        before,
        waiting,
    );
    assert_eq!(questions.len(), 4, "four questions are put to the user");
    assert_eq!(
        refusals.len(),
        2,
        "two calls beyond the bound are refused at once"
    );
    for answer in &refusals {
        let error = agent_error(answer);
        assert_eq!(error["code"], "CAPACITY", "{error}");
        assert_eq!(error["retryable"], true, "{error}");
    }
    assert!(
        waiting.0 < before.0 + GROWTH_MIB * 1024,
        "resident memory grew from {} to {} KiB while calls waited",
        before.0,
        waiting.0
    );

    // Answered, they free their places: the next call is asked.
    for question in &questions {
        shop.send(&elicit_answer(question, decline()));
    }
    for id in pending {
        assert_eq!(
            agent_error(&shop.answer(id))["code"],
            "CONFIRMATION_DECLINED"
        );
    }
    shop.send_call(
        30,
        "cancel_order",
        &json!({ "order_id": "ord-1001" }),
        json!({}),
    );
    let asked = shop
        .server_message("elicitation/create", PATIENCE)
        .expect("asked again once the others were answered");
    shop.send(&elicit_answer(&asked, approve()));
    assert_eq!(shop.answer(30)["result"]["isError"], false);
    assert_eq!(order_status(&mut shop, 31), "cancelled");
}

#[test]
fn an_unanswered_question_expires_and_a_late_approval_runs_nothing() {
    let mut shop = ConfirmShop::start(Wire::Legacy, &[]);
    place_order(&mut shop, 1);
    let asked_at = Instant::now();
    shop.send_call(
        2,
        "cancel_order",
        &json!({ "order_id": "ord-1001" }),
        json!({}),
    );
    let asked = shop
        .server_message("elicitation/create", PATIENCE)
        .expect("the user is asked");

    // Nobody answers: past the deadline the call is refused, and the question withdrawn.
    let answer = shop
        .answer_within(2, DEADLINE + Duration::from_secs(15))
        .expect("the call is answered once its question expires");
    let waited = asked_at.elapsed();
    let error = agent_error(&answer);
    assert_eq!(error["code"], "CONFIRMATION_TIMEOUT", "{error}");
    assert_eq!(error["category"], "timeout", "{error}");
    assert_eq!(error["retryable"], true, "{error}");
    assert!(waited >= DEADLINE, "answered after {waited:?}");
    let withdrawn = shop
        .server_message("notifications/cancelled", PATIENCE)
        .expect("the server withdraws its question");
    assert_eq!(withdrawn["params"]["requestId"], asked["id"], "{withdrawn}");
    eprintln!("the unanswered question expired after {waited:?}");

    // The approval comes late: it approves nothing.
    shop.send(&elicit_answer(&asked, approve()));
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
