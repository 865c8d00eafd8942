#!/usr/bin/env python3
"""Soak: drive `shop mcp` over raw stdio JSON-RPC with a mixed load, then check that nothing was
lost or run twice, sampling the server's RSS throughout.

    cargo build --release -p shop
    python3 tests/soak/soak.py [--calls 1000000] [--window 64] [--binary target/release/shop]

The mix, per call (seeded, reproducible with --seed):
  search_products / get_product / get_order                 reads (list_orders rarely: it grows)
  place_order with a fresh request id                        a write, recorded for the invariants
  place_order retrying a recent request id                   must replay the first outcome exactly
  place_order without a request id                           a write, recorded
  cancel_order (the server has the grant, so stock cycles)   restocks; with a request id, retried too
  send_receipt                                               external write
  sales_report, most cancelled after 0-300 ms                 notifications/cancelled mid-way
  place_order cancelled right after sending                  an interrupted write: may or may not
                                                             have run; a retry says which or
                                                             EXECUTION_UNCERTAIN

At the end, over list_orders and get_product:
  * every order the client saw succeed exists exactly once, with the lines it was told;
  * every replay returned exactly the first outcome (same execution id, same result);
  * no order exists that the client did not see, beyond the interrupted (cancelled) writes;
  * stock is conserved: initial units = units now + units in orders still placed;
  * cancelled orders are exactly the ones the client saw cancelled.
Exit status 1 on any violation. Figures go to stdout (and --json FILE).
"""

import argparse
import json
import os
import random
import select
import subprocess
import sys
import time
from collections import deque

RID = "carmy/request_id"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Server:
    def __init__(self, binary, args):
        # Request ids repeat from one run to the next ("k-1", ...): each run gets a store of its
        # own (this process's memory), never the default file that would replay the last run.
        self.proc = subprocess.Popen(
            [binary, "mcp", *args],
            env={**os.environ, "CARMY_STORE": "memory"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        self.out = self.proc.stdin
        self.inp = self.proc.stdout
        self.buffer = b""
        self.pending_out = []

    def send(self, message):
        self.pending_out.append(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def flush(self):
        if self.pending_out:
            data = b"".join(self.pending_out)
            self.pending_out.clear()
            self.out.write(data)

    def messages(self, timeout):
        """Whatever complete messages are available within `timeout` seconds."""
        self.flush()
        ready, _, _ = select.select([self.inp], [], [], timeout)
        if not ready:
            return []
        chunk = os.read(self.inp.fileno(), 1 << 20)
        if not chunk:
            raise RuntimeError("the server closed its stdout")
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--binary", default="target/release/shop")
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--json", help="also write the figures here")
    options = parser.parse_args()
    rng = random.Random(options.seed)

    server = Server(options.binary, ["--principal", "soak", "--grant", "confirm:cancel_order"])
    pid = server.proc.pid
    next_id = 0
    waiting = {}  # json-rpc id -> (kind, details)
    cancelled_ids = set()
    violations = []
    counts = {}

    def request(method, params, kind, details=None):
        nonlocal next_id
        next_id += 1
        server.send({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params})
        waiting[next_id] = (kind, details)
        return next_id

    def call(name, arguments, kind, details=None, request_id=None):
        params = {"name": name, "arguments": arguments}
        if request_id is not None:
            params["_meta"] = {RID: request_id}
        return request("tools/call", params, kind, details)

    def wait_all():
        while waiting:
            for message in server.messages(30):
                handle(message)

    # Lifecycle.
    server.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                 "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                            "clientInfo": {"name": "soak", "version": "0"}}})
    while True:
        got = server.messages(10)
        if any(message.get("id") == "init" for message in got):
            break
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    # Initial stock, product ids.
    listing = {}

    def handle_setup(message):
        listing[message["id"]] = message

    products = []
    initial_stock = {}
    first = request("tools/call", {"name": "search_products", "arguments": {"query": "", "limit": 50}}, "setup")
    handle = lambda message: (waiting.pop(message.get("id"), None), handle_setup(message))
    wait_all()
    for product in listing[first]["result"]["structuredContent"]["products"]:
        products.append(product["id"])
    ids = {}
    for product in products:
        ids[request("tools/call", {"name": "get_product", "arguments": {"id": product}}, "setup")] = product
    wait_all()
    for rid, product in ids.items():
        initial_stock[product] = listing[rid]["result"]["structuredContent"]["stock"]
    orderable = [p for p in products if initial_stock[p] > 0]

    # State the invariants are checked against.
    seen_orders = {}  # order_id -> lines (as placed)
    first_outcome = {}  # request id -> (execution id, result) of its first answer
    recent_keys = deque(maxlen=1000)  # request ids that may be retried (well within the store bound)
    interrupted_writes = 0
    client_cancelled = set()  # order ids the client saw cancelled
    placed_ids = deque(maxlen=2000)
    order_execution = {}  # order id -> the execution that placed it
    statuses = {}

    def record_outcome(key, result):
        meta = result.get("_meta", {})
        outcome = (meta.get("carmy/execution_id"), json.dumps(result.get("structuredContent"), sort_keys=True),
                   json.dumps(meta.get("carmy/error"), sort_keys=True))
        if key in first_outcome:
            if first_outcome[key] != outcome and meta.get("carmy/error", {}).get("code") != "EXECUTION_UNCERTAIN":
                violations.append(f"replay of {key} differs: {first_outcome[key]} vs {outcome}")
        else:
            first_outcome[key] = outcome

    def on_result(message):
        id_ = message.get("id")
        entry = waiting.pop(id_, None)
        if entry is None:
            if id_ not in cancelled_ids:
                violations.append(f"an answer for an unknown id: {str(message)[:200]}")
            return
        kind, details = entry
        counts[kind] = counts.get(kind, 0) + 1
        if "error" in message:
            if kind != "sales_report_cancelled":
                violations.append(f"JSON-RPC error for {kind}: {message['error']}")
            return
        result = message["result"]
        status = result.get("_meta", {}).get("carmy/status")
        statuses[status] = statuses.get(status, 0) + 1
        error = result.get("_meta", {}).get("carmy/error")
        # An interrupted write answered before its cancellation went out is a plain write.
        if kind in ("place", "place_retry", "place_anon", "place_interrupted", "place_interrupted_retry"):
            key = details.get("key")
            if key is not None:
                record_outcome(key, result)
            if error is None:
                order = result["structuredContent"]
                oid = order["order_id"]
                lines = json.dumps(order["lines"], sort_keys=True)
                if oid in seen_orders and seen_orders[oid] != lines:
                    violations.append(f"{oid} answered with other lines")
                execution = result.get("_meta", {}).get("carmy/execution_id")
                if oid in order_execution and order_execution[oid] != execution:
                    violations.append(f"{oid} returned by two executions ({kind}, key {key}): "
                                      f"{order_execution[oid]} and {execution}")
                order_execution.setdefault(oid, execution)
                seen_orders[oid] = lines
                placed_ids.append(oid)
            elif error["code"] not in ("OUT_OF_STOCK", "EXECUTION_UNCERTAIN"):
                violations.append(f"place_order failed: {error}")
        elif kind == "cancel":
            if error is None:
                client_cancelled.add(result["structuredContent"]["order_id"])
            elif error["code"] not in ("ORDER_ALREADY_CANCELLED", "ORDER_NOT_FOUND"):
                violations.append(f"cancel_order failed: {error}")
        elif kind == "sales_report_cancelled" or kind == "sales_report":
            if error is not None and error["code"] != "CANCELLED":
                violations.append(f"sales_report failed: {error}")
        elif error is not None and error["code"] not in ("ORDER_NOT_FOUND", "PRODUCT_NOT_FOUND"):
            violations.append(f"{kind} failed: {error}")

    handle = on_result
    address = {"name": "Soak", "street": "1 Loop", "city": "Paris", "postal_code": "75001", "country": "FR"}
    to_cancel = []  # (json-rpc id, send time + delay) for sales reports and interrupted writes
    sent = 0
    started = time.monotonic()
    samples = []
    next_sample = started
    rss_warm = None
    key_seq = 0

    while sent < options.calls or waiting:
        now = time.monotonic()
        if now >= next_sample:
            samples.append((round(now - started, 1), sent, rss_kib(pid)))
            next_sample = now + 2
            if rss_warm is None and sent >= 20_000:
                rss_warm = rss_kib(pid)
        while to_cancel and to_cancel[0][1] <= now:
            jid, _ = to_cancel.pop(0)
            if jid in waiting:
                kind, details = waiting.pop(jid)
                cancelled_ids.add(jid)
                counts[kind + "_sent_cancel"] = counts.get(kind + "_sent_cancel", 0) + 1
                if kind == "place_interrupted":
                    interrupted_writes += 1
                    # Retry the interrupted write: a replay, a fresh run if it never started,
                    # or EXECUTION_UNCERTAIN; never a second order.
                    call("place_order", details["args"], "place_interrupted_retry", {"key": details["key"]},
                         details["key"])
                server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": jid, "reason": "soak"}})
        while sent < options.calls and len(waiting) < options.window:
            sent += 1
            roll = rng.random()
            if roll < 0.25:
                call("search_products", {"query": rng.choice(["mouse", "usb", "cable", "a", "zzz"]),
                                         "limit": rng.randint(1, 10)}, "search")
            elif roll < 0.45:
                call("get_product", {"id": rng.choice(products + ["sku-nope"])}, "get_product")
            elif roll < 0.60:
                key_seq += 1
                key = f"k-{key_seq}"
                product = rng.choice(orderable)
                args = {"lines": [{"product_id": product, "quantity": rng.randint(1, 2)}], "ship_to": address}
                call("place_order", args, "place", {"key": key, "args": args}, key)
                recent_keys.append((key, args))
            elif roll < 0.72 and recent_keys:
                key, args = rng.choice(recent_keys)
                call("place_order", args, "place_retry", {"key": key}, key)
            elif roll < 0.75:
                product = rng.choice(orderable)
                call("place_order", {"lines": [{"product_id": product, "quantity": 1}], "ship_to": address},
                     "place_anon", {})
            elif roll < 0.85 and placed_ids:
                oid = rng.choice(placed_ids)
                call("cancel_order", {"order_id": oid, "reason": "soak"}, "cancel")
            elif roll < 0.90 and placed_ids:
                call("get_order", {"order_id": rng.choice(placed_ids)}, "get_order")
            elif roll < 0.93 and placed_ids:
                call("send_receipt", {"order_id": rng.choice(placed_ids), "email": "soak@example.com"},
                     "receipt")
            elif roll < 0.9305:
                # Every order, so rarely: its answer grows with the books.
                if sent % 100_000 == 0 or sent < 1000:
                    call("list_orders", {}, "list")
                else:
                    call("get_order", {"order_id": "ord-nope"}, "get_order")
            elif roll < 0.9325:
                jid = call("sales_report", {"seconds": 1}, "sales_report_cancelled")
                to_cancel.append((jid, now + rng.random() * 0.3))
            elif roll < 0.9327:
                call("sales_report", {"seconds": 1}, "sales_report")
            elif roll < 0.935:
                key_seq += 1
                key = f"k-{key_seq}"
                args = {"lines": [{"product_id": rng.choice(orderable), "quantity": 1}], "ship_to": address}
                jid = call("place_order", args, "place_interrupted", {"key": key, "args": args}, key)
                to_cancel.append((jid, now))
            else:
                call("get_product", {"id": rng.choice(products)}, "get_product")
        to_cancel.sort(key=lambda item: item[1])
        for message in server.messages(0.05 if to_cancel else 1):
            if "id" in message:
                on_result(message)
    elapsed = time.monotonic() - started
    rss_end = rss_kib(pid)
    samples.append((round(elapsed, 1), sent, rss_end))

    # Invariants, from the server's own books.
    final = {}
    handle = lambda message: (waiting.pop(message.get("id"), None), handle_setup(message))
    listing.clear()
    orders_id = request("tools/call", {"name": "list_orders", "arguments": {}}, "setup")
    stock_ids = {request("tools/call", {"name": "get_product", "arguments": {"id": p}}, "setup"): p for p in products}
    deadline = time.monotonic() + 60
    while waiting and time.monotonic() < deadline:
        for message in server.messages(5):
            if message.get("id") in waiting:
                handle(message)
    orders = listing[orders_id]["result"]["structuredContent"]["orders"]
    for rid, product in stock_ids.items():
        final[product] = listing[rid]["result"]["structuredContent"]["stock"]
    by_id = {}
    for order in orders:
        if order["order_id"] in by_id:
            violations.append(f"{order['order_id']} listed twice")
        by_id[order["order_id"]] = order
    for oid, lines in seen_orders.items():
        if oid not in by_id:
            violations.append(f"{oid} was answered but does not exist")
        elif json.dumps(by_id[oid]["lines"], sort_keys=True) != lines:
            violations.append(f"{oid} exists with other lines")
    unseen = [oid for oid in by_id if oid not in seen_orders]
    if len(unseen) > interrupted_writes:
        violations.append(f"{len(unseen)} orders nobody was told about, "
                          f"but only {interrupted_writes} writes were interrupted")
    cancelled_now = {oid for oid, order in by_id.items() if order["status"] == "cancelled"}
    if cancelled_now != client_cancelled:
        violations.append(f"cancelled orders differ: server {len(cancelled_now)}, client {len(client_cancelled)}")
    in_orders = {p: 0 for p in products}
    for order in orders:
        if order["status"] == "placed":
            for line in order["lines"]:
                in_orders[line["product_id"]] += line["quantity"]
    for product in products:
        if initial_stock[product] != final[product] + in_orders[product]:
            violations.append(f"stock of {product}: {initial_stock[product]} at start, "
                              f"{final[product]} now + {in_orders[product]} in orders")

    server.proc.stdin.close()
    server.proc.wait(timeout=30)
    rss_peak = max(sample[2] for sample in samples)
    figures = {
        "calls": sent,
        "seconds": round(elapsed, 1),
        "calls_per_second": round(sent / elapsed),
        "rss_kib": {"start": samples[0][2], "after_20k_calls": rss_warm, "peak": rss_peak, "end": rss_end},
        "orders_existing": len(orders),
        "orders_seen_by_client": len(seen_orders),
        "orders_cancelled": len(cancelled_now),
        "interrupted_writes": interrupted_writes,
        "request_ids_used": len(first_outcome),
        "answers_by_kind": counts,
        "results_by_status": statuses,
        "violations": len(violations),
        "server_exit": server.proc.returncode,
        "rss_samples": samples[:: max(1, len(samples) // 20)],
    }
    print(json.dumps(figures, indent=1))
    for violation in violations[:50]:
        print("VIOLATION:", violation, file=sys.stderr)
    if options.json:
        with open(options.json, "w") as out:
            json.dump(figures, out, indent=1)
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
