//! The shop's stdio transport under the outside attack of issue 14 (rows 11 to 14 and the ids
//! it found matched loosely), replayed against the real binary: cancellations and reused ids,
//! a cancel at the in-flight bound, ids that differ only in how they are written, a second
//! `initialize`, and log lines forged or swollen by what a client sends. Run one against the
//! build from before the fix with `SHOP_BIN=/path/to/old/shop` to see the attack succeed.
//! Figures (time, memory from `/proc`, bytes of stderr) are printed (`--nocapture`).

use crate::common;

use std::{
    io::Write,
    time::{Duration, Instant},
};

use common::{PATIENCE, RawShop};
use serde_json::{Value, json};

fn call(id: Value, name: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": name, "arguments": arguments } })
}

fn cancel(id: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": { "requestId": id, "reason": "changed my mind" } })
}

fn line(message: &Value) -> String {
    format!("{message}\n")
}

/// Reads messages until one answers `id`; the others are returned beside it.
fn answer_to(shop: &mut RawShop, id: &Value) -> (Value, Vec<Value>) {
    let mut others = Vec::new();
    loop {
        let message = shop.receive();
        if message.get("id") == Some(id) && message.get("method").is_none() {
            return (message, others);
        }
        others.push(message);
    }
}

// Row 11: cancel a request and reuse its id at once.
#[test]
fn an_id_reused_right_after_its_cancel_names_the_new_request() {
    const ROUNDS: u64 = 20;
    let mut shop = RawShop::start(&[], &[]);
    shop.initialize(json!({}));
    for round in 0..ROUNDS {
        let id = json!(1000 + round);
        shop.send(&call(id.clone(), "sales_report", json!({ "seconds": 5 })));
        std::thread::sleep(Duration::from_millis(50));
        // The cancel and the new request in one write: the old call is still winding down
        // when the new one arrives.
        let both = line(&cancel(id.clone())) + &line(&call(id.clone(), "list_orders", json!({})));
        shop.write(both.as_bytes());
        let answer = shop.receive();
        assert_eq!(answer["id"], id, "round {round}: {answer}");
        assert!(
            answer["result"]["structuredContent"]["orders"].is_array(),
            "round {round}: the reused id was answered for the cancelled call, not the new one: {answer}"
        );
    }
    // Nothing else arrives for any of those ids: the cancelled calls' answers are dropped.
    shop.send(&json!({ "jsonrpc": "2.0", "id": "end", "method": "ping" }));
    let (_, others) = answer_to(&mut shop, &json!("end"));
    assert!(others.is_empty(), "{others:?}");
}

// Row 12: at the in-flight bound, a cancel still gets through.
#[test]
fn a_cancel_gets_through_at_the_in_flight_bound() {
    // The bound on requests in flight (and on concurrent executions) is 1,024; 200 more wait
    // behind it, more than a pipe's 64 KiB hold.
    const CALLS: u64 = 1024 + 200;
    let mut shop = RawShop::start(&[], &[]);
    shop.initialize(json!({}));
    let before = shop.memory_kib();
    let calls: String = (0..CALLS)
        .map(|id| line(&call(json!(id), "sales_report", json!({ "seconds": 30 }))))
        .collect();
    let cancels: String = (0..CALLS).map(|id| line(&cancel(json!(id)))).collect();
    let mut stdin = shop.take_stdin();
    let (done, finished) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        let started = Instant::now();
        let result = stdin
            .write_all(calls.as_bytes())
            .and_then(|()| stdin.write_all(cancels.as_bytes()))
            .and_then(|()| stdin.flush());
        let _ = done.send((result.is_ok(), started.elapsed()));
        stdin
    });
    let written = finished.recv_timeout(Duration::from_secs(10));
    let at_bound = shop.memory_kib();
    let (ok, took) = written.unwrap_or_else(|_| {
        panic!(
            "{CALLS} calls and their cancels were not all taken within 10 s: the cancels are \
             stuck behind the calls until those finish"
        )
    });
    assert!(ok, "the writes failed");
    let mut stdin = writer.join().expect("the writer");
    // Every call was cancelled: none is answered, and the server is free at once.
    let started = Instant::now();
    let ping = line(&json!({ "jsonrpc": "2.0", "id": "ping", "method": "ping" }));
    stdin.write_all(ping.as_bytes()).expect("write");
    stdin.flush().expect("flush");
    let answer = shop.receive();
    assert_eq!(
        answer["id"], "ping",
        "a cancelled call was answered: {answer}"
    );
    let fresh = line(&call(
        json!("fresh"),
        "sales_report",
        json!({ "seconds": 1 }),
    ));
    stdin.write_all(fresh.as_bytes()).expect("write");
    stdin.flush().expect("flush");
    let answer = shop.receive();
    assert_eq!(answer["id"], "fresh", "{answer}");
    assert!(
        answer["result"]["structuredContent"]["orders"].is_number(),
        "{answer}"
    );
    let after = shop.memory_kib();
    eprintln!(
        "{CALLS} calls and {CALLS} cancels written in {took:?}; a new call answered {:?} later; \
         VmRSS {} -> {} -> {} KiB, VmHWM {} KiB",
        started.elapsed(),
        before.0,
        at_bound.0,
        after.0,
        after.1
    );
}

// Ids are JSON values, matched exactly: `7`, `7.0` and `"7"` are three ids.
#[test]
fn ids_are_echoed_as_written() {
    let mut shop = RawShop::start(&[], &[]);
    shop.initialize(json!({}));
    for id in ["7.0", "1e2", "-0", "\"7\"", "\"\\u0041\""] {
        shop.write(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes());
        let answer = shop.receive_line(PATIENCE).expect("an answer");
        assert!(
            answer.contains(&format!("\"id\":{id},")),
            "sent id {id}, answered {answer}"
        );
    }
}

#[test]
fn a_cancel_names_exactly_one_id() {
    let mut shop = RawShop::start(&[], &[]);
    shop.initialize(json!({}));
    // A cancel naming `7.0` or `"7"` does not cancel request `7`.
    shop.send(&call(json!(7), "sales_report", json!({ "seconds": 1 })));
    shop.write(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7.0}}\n",
    );
    shop.send(&cancel(json!("7")));
    let answer = shop
        .receive_line(Duration::from_secs(5))
        .unwrap_or_else(|| {
            panic!("request 7 was never answered: a cancel naming another id stopped it")
        });
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(answer["id"], 7, "{answer}");
    assert!(
        answer["result"]["structuredContent"]["orders"].is_number(),
        "{answer}"
    );
}

/// Starts `cancel_order` under `--confirm-via-client` and returns the server's question.
fn asked(shop: &mut RawShop) -> Value {
    shop.send(&call(
        json!("call"),
        "cancel_order",
        json!({ "order_id": "ord-1001" }),
    ));
    let question = shop.receive();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    question
}

// An answer to the server's request must carry its id exactly.
#[test]
fn an_answer_to_the_servers_question_must_carry_its_exact_id() {
    let mut shop = RawShop::start(&["--confirm-via-client"], &[]);
    shop.initialize(json!({ "elicitation": { "form": {} } }));
    let approve = json!({ "action": "accept", "content": { "approve": true } });
    // Approvals under look-alike ids: `"0"` for `0`, then `0.0` for `0`.
    let look_alikes: [fn(i64) -> String; 2] = [|id| format!("\"{id}\""), |id| format!("{id}.0")];
    for look_alike in look_alikes {
        let question = asked(&mut shop);
        let id = question["id"]
            .as_i64()
            .expect("the server's ids are integers");
        let wrong = look_alike(id);
        shop.write(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{wrong},\"result\":{approve}}}\n").as_bytes(),
        );
        // The real answer declines.
        shop.send(&json!({ "jsonrpc": "2.0", "id": id, "result": { "action": "decline" } }));
        let answer = shop.receive();
        assert_eq!(answer["id"], "call", "{answer}");
        assert_eq!(
            answer["result"]["_meta"]["carmy/error"]["code"], "CONFIRMATION_DECLINED",
            "an approval with id {wrong} was taken for the answer to request {id}: {answer}"
        );
    }
}

// A second `initialize` does not replace what the client declared first.
#[test]
fn a_second_initialize_is_refused_and_the_first_capabilities_stand() {
    let mut shop = RawShop::start(&["--confirm-via-client"], &[]);
    shop.initialize(json!({}));
    shop.send(&json!({
        "jsonrpc": "2.0", "id": "again", "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": { "elicitation": { "form": {} } },
            "clientInfo": { "name": "someone else", "version": "2" }
        }
    }));
    let answer = shop.receive();
    assert_eq!(answer["id"], "again", "{answer}");
    assert_eq!(
        answer["error"]["code"], -32600,
        "a second initialize was accepted: {answer}"
    );
    // The client declared no elicitation: it is not asked, the call needs a grant.
    shop.send(&call(
        json!("call"),
        "cancel_order",
        json!({ "order_id": "ord-1001" }),
    ));
    let answer = shop.receive();
    assert_eq!(answer["id"], "call", "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["carmy/error"]["code"], "CONFIRMATION_REQUIRED",
        "{answer}"
    );
}

// What waits at the in-flight bound is bounded in bytes: a flood of large requests behind
// 1,024 slow calls is held up to 4 MiB of lines, then reading stops.
#[test]
fn requests_waiting_at_the_in_flight_bound_are_bounded_in_bytes() {
    const SLOW: u64 = 1024;
    const LARGE: u64 = 1000;
    let pad = "x".repeat(100_000);
    let mut shop = RawShop::start(&[], &[]);
    shop.initialize(json!({}));
    let before = shop.memory_kib();
    let calls: String = (0..SLOW)
        .map(|id| line(&call(json!(id), "sales_report", json!({ "seconds": 30 }))))
        .collect();
    shop.write(calls.as_bytes());
    let mut stdin = shop.take_stdin();
    let written = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let progress = std::sync::Arc::clone(&written);
    std::thread::spawn(move || {
        for id in 0..LARGE {
            let large = call(json!(SLOW + id), "list_orders", json!({ "pad": pad }));
            if stdin.write_all(line(&large).as_bytes()).is_err() {
                break;
            }
            progress.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    // Until the writer is blocked: the server stopped reading.
    let mut last = u64::MAX;
    let mut peak = before.0;
    let deadline = Instant::now() + PATIENCE;
    let mut stalled_since = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        peak = peak.max(shop.memory_kib().0);
        let now = written.load(std::sync::atomic::Ordering::SeqCst);
        if now != last {
            last = now;
            stalled_since = Instant::now();
        } else if stalled_since.elapsed() > Duration::from_millis(1500) {
            break;
        }
        assert!(Instant::now() < deadline, "the writer never stalled");
    }
    let (rss, hwm) = shop.memory_kib();
    eprintln!(
        "{SLOW} calls in flight, then {last} of {LARGE} requests of 100 kB taken before the \
         server stopped reading; VmRSS {} -> {rss} KiB (peak sampled {peak}), VmHWM {hwm} KiB",
        before.0
    );
    assert!(
        last < LARGE,
        "the server kept reading 100 MB of requests it cannot run yet"
    );
    assert!(
        hwm < before.1.max(before.0) + 64 * 1024,
        "VmHWM {hwm} KiB after the flood, {} KiB before",
        before.1
    );
}

/// Lines of `log` that a client wrote: those starting with `FORGED`.
fn forged_lines(log: &str) -> usize {
    log.lines()
        .filter(|line| line.starts_with("FORGED"))
        .count()
}

// Row 13: a newline in a request id (or a tool name) cannot start a log line.
#[test]
fn forged_ids_cannot_forge_log_lines() {
    let mut shop = RawShop::start(&[], &[("RUST_LOG", "debug")]);
    shop.initialize(json!({}));
    let forged = |n: u32| format!("x\nFORGED {n} 2026-01-01T00:00:00Z  INFO admin logged in");
    shop.send(&json!({ "jsonrpc": "2.0", "id": forged(1), "method": "ping" }));
    shop.receive();
    shop.send(&call(json!(forged(2)), &forged(3), json!({})));
    shop.receive();
    // The same id twice while the first is in flight: Carmy's transport refuses the second.
    let slow = call(json!(forged(4)), "sales_report", json!({ "seconds": 1 }));
    shop.write((line(&slow) + &line(&slow)).as_bytes());
    shop.receive();
    shop.send(&cancel(json!(forged(5))));
    shop.receive();
    let log = String::from_utf8_lossy(&shop.stderr()).into_owned();
    let lines = log.lines().count();
    eprintln!(
        "RUST_LOG=debug: {lines} log lines, {} forged",
        forged_lines(&log)
    );
    assert!(lines > 10, "the server logged at debug: {log}");
    assert_eq!(forged_lines(&log), 0, "{log}");
    // Every line is an event of the server's, starting with its timestamp.
    for line in log.lines() {
        assert!(line.starts_with("20"), "{line}");
    }
}

// Row 14: a huge tool name cannot swell the log, at `warn` or `debug`.
#[test]
fn huge_names_cannot_swell_the_log() {
    const CALLS: u64 = 5;
    // Just under the 4 MiB line limit.
    let name = "x".repeat(4_000_000);
    for level in ["warn", "debug"] {
        let mut shop = RawShop::start(&[], &[("RUST_LOG", level)]);
        shop.initialize(json!({}));
        for id in 0..CALLS {
            shop.send(&call(json!(id), &name, json!({})));
            let answer = shop.receive();
            assert_eq!(answer["id"], id, "{}", &answer.to_string()[..200]);
        }
        let log = shop.stderr();
        let longest = log.split(|&byte| byte == b'\n').map(<[u8]>::len).max();
        eprintln!(
            "RUST_LOG={level}: {CALLS} calls naming a {} MB tool: {} bytes of log, longest line {} bytes",
            name.len() / 1_000_000,
            log.len(),
            longest.unwrap_or(0)
        );
        assert!(
            longest.unwrap_or(0) <= 4096 + 64,
            "a log line of {longest:?} bytes"
        );
        assert!(log.len() < 256 * 1024, "{} bytes of log", log.len());
    }
}
