//! The shop's tools through the real pipeline, in process: orders are their placer's, listed a
//! page at a time, with bounded addresses.

use std::time::Duration;

use carmy::{
    CancellationToken, State,
    execution::{ExecutionStatus, Request},
    testing::TestHost,
};
use serde_json::{Value, json};
use shop::{
    Store,
    catalog::{SearchInput, SearchOutput, search_products},
    orders::{Order, OrderList},
};

fn host() -> (TestHost, Store) {
    let store = Store::new();
    (
        TestHost::new(shop::runtime_with(store.clone()).unwrap()),
        store,
    )
}

/// Units of `product_id` in stock, as `get_product` tells.
async fn stock(host: &TestHost, product_id: &str) -> u64 {
    let outcome = host.call("get_product", json!({ "id": product_id })).await;
    outcome.result.unwrap()["stock"].as_u64().unwrap()
}

async fn order_count(host: &TestHost) -> usize {
    let orders: OrderList = host.call("list_orders", json!({})).await.unwrap_output();
    orders.orders.len()
}

fn order_args(quantity: u32) -> Value {
    json!({
        "lines": [{ "product_id": "sku-001", "quantity": quantity }],
        "ship_to": {
            "name": "Ada Lovelace", "street": "12 St James's Square",
            "city": "London", "postal_code": "SW1Y 4JH", "country": "GB"
        },
        "delivery": "express"
    })
}

#[tokio::test]
async fn a_tool_is_a_function_you_can_call_directly() {
    let input = SearchInput {
        query: "MOUSE".into(),
        limit: Some(2),
        category: None,
    };
    let found = search_products(input, State::new(Store::new()))
        .await
        .unwrap();
    assert_eq!(found.total, 4);
    assert_eq!(found.products.len(), 2);
}

#[tokio::test]
async fn search_finds_exactly_four_mice() {
    let (host, _) = host();
    let outcome = host
        .call("search_products", json!({ "query": "mouse" }))
        .await;
    let found: SearchOutput = outcome.unwrap_output();
    assert_eq!(found.total, 4);
    let ids: Vec<_> = found.products.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["sku-001", "sku-002", "sku-003", "sku-004"]);
    let outcome = host
        .call(
            "search_products",
            json!({ "query": "mouse", "category": "audio" }),
        )
        .await;
    assert_eq!(outcome.unwrap_output::<SearchOutput>().total, 0);
    let outcome = host
        .call(
            "search_products",
            json!({ "query": "mouse", "category": "mice" }),
        )
        .await;
    assert_eq!(outcome.unwrap_error_code(), "INVALID_ARGUMENTS");
}

#[tokio::test]
async fn unknown_products_point_to_search() {
    let (host, _) = host();
    let outcome = host.call("get_product", json!({ "id": "sku-999" })).await;
    let error = outcome.error().unwrap();
    assert_eq!(error.code(), "PRODUCT_NOT_FOUND");
    assert_eq!(error.next_tool(), Some("search_products"));
}

#[tokio::test]
async fn a_retried_order_is_placed_once() {
    let (host, _) = host();
    let first = host
        .call_with_request_id("place_order", order_args(2), "checkout-42")
        .await;
    let retry = host
        .call_with_request_id("place_order", order_args(2), "checkout-42")
        .await;
    assert_eq!(first.status, ExecutionStatus::Succeeded);
    assert_eq!(retry.status, ExecutionStatus::Replayed);
    assert_eq!(
        first.unwrap_output::<Order>(),
        retry.unwrap_output::<Order>()
    );
    assert_eq!(order_count(&host).await, 1);
    assert_eq!(stock(&host, "sku-001").await, 3);
    // The same request id for another order is a conflict, not a second order.
    let other = host
        .call_with_request_id("place_order", order_args(1), "checkout-42")
        .await;
    assert_eq!(other.unwrap_error_code(), "IDEMPOTENCY_CONFLICT");
}

#[tokio::test]
async fn a_refused_order_changes_nothing() {
    let (host, _) = host();
    let mut args = order_args(5);
    args["lines"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "product_id": "sku-001", "quantity": 1 }));
    let outcome = host.call("place_order", args).await;
    assert_eq!(outcome.unwrap_error_code(), "OUT_OF_STOCK");
    assert_eq!(stock(&host, "sku-001").await, 5);
    assert_eq!(order_count(&host).await, 0);
}

#[tokio::test]
async fn cancelling_needs_the_hosts_confirmation() {
    let (host, _) = host();
    let order: Order = host
        .call("place_order", order_args(1))
        .await
        .unwrap_output();
    let args = json!({ "order_id": order.order_id, "reason": "changed my mind" });
    let refused = host.call("cancel_order", args.clone()).await;
    assert_eq!(refused.unwrap_error_code(), "CONFIRMATION_REQUIRED");
    assert_eq!(stock(&host, "sku-001").await, 4, "not run");

    let host = host.with_grant("confirm:cancel_order");
    let cancelled = host.call("cancel_order", args.clone()).await;
    assert_eq!(
        cancelled.result.as_ref().unwrap()["refunded_cents"],
        1999 + 990
    );
    assert_eq!(stock(&host, "sku-001").await, 5);
    // Idempotent: cancelling again answers the same and puts nothing back twice.
    let again = host.call("cancel_order", args).await;
    assert_eq!(again.result, cancelled.result);
    assert_eq!(stock(&host, "sku-001").await, 5);
}

#[tokio::test]
async fn receipts_go_to_the_outbox() {
    let (host, store) = host();
    let order: Order = host
        .call("place_order", order_args(1))
        .await
        .unwrap_output();
    let args = json!({ "order_id": order.order_id, "email": "ada@example.com" });
    assert!(host.call("send_receipt", args).await.is_ok());
    assert_eq!(store.outbox().len(), 1);
    let bad = host
        .call(
            "send_receipt",
            json!({ "order_id": "ord-0", "email": "x@example.com" }),
        )
        .await;
    assert_eq!(bad.unwrap_error_code(), "ORDER_NOT_FOUND");
}

#[tokio::test(start_paused = true)]
async fn the_sales_report_stops_when_cancelled() {
    let (host, _) = host();
    let token = CancellationToken::new();
    let running = tokio::spawn({
        let host = host.clone();
        let token = token.clone();
        async move {
            host.execute(Request::new("sales_report", json!({ "seconds": 60 })).cancellation(token))
                .await
        }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    token.cancel();
    let outcome = running.await.unwrap();
    assert_eq!(outcome.status, ExecutionStatus::Cancelled);
    let finished = host.call("sales_report", json!({ "seconds": 1 })).await;
    assert_eq!(finished.result.unwrap()["orders"], 0);
}

#[tokio::test]
async fn two_shops_on_one_store_share_their_books() {
    let store = std::sync::Arc::new(carmy::store::MemoryStore::default());
    let replica = || {
        TestHost::new(
            shop::shop(Store::new())
                .store(std::sync::Arc::clone(&store))
                .build()
                .unwrap(),
        )
    };
    let (first, second) = (replica(), replica());
    let placed: Order = first
        .call_with_request_id("place_order", order_args(2), "shared-1")
        .await
        .unwrap_output();
    // The other replica sees the order and its stock, replays the retry, and numbers the next
    // order after it.
    assert_eq!(stock(&second, "sku-001").await, 3);
    let retry = second
        .call_with_request_id("place_order", order_args(2), "shared-1")
        .await;
    assert_eq!(retry.status, ExecutionStatus::Replayed);
    assert_eq!(retry.unwrap_output::<Order>(), placed);
    let next: Order = second
        .call("place_order", order_args(1))
        .await
        .unwrap_output();
    assert_eq!(placed.order_id, "ord-1001");
    assert_eq!(next.order_id, "ord-1002");
    assert_eq!(order_count(&first).await, 2);
}

/// The ids of the products in stock (5 units each).
fn in_stock() -> Vec<String> {
    let store = Store::new();
    let products = store.products().iter().filter(|product| product.in_stock);
    products.map(|product| product.id.clone()).collect()
}

/// `order_args(1)` of `product`: one unit, so that many orders fit the stock.
fn one_of(product: &str) -> Value {
    let mut args = order_args(1);
    args["lines"][0]["product_id"] = json!(product);
    args
}

#[tokio::test]
async fn an_order_is_seen_and_touched_only_by_whoever_placed_it() {
    let store = Store::new();
    let runtime = shop::runtime_with(store.clone()).unwrap();
    let alice = TestHost::new(runtime.clone()).with_principal("alice");
    let bob = TestHost::new(runtime.clone())
        .with_principal("bob")
        .with_grant("confirm:cancel_order");
    let anonymous = TestHost::new(runtime).with_grant("confirm:cancel_order");
    let order: Value = alice
        .call("place_order", order_args(1))
        .await
        .unwrap_output();
    assert_eq!(order["placed_by"], "alice");
    let id = json!({ "order_id": order["order_id"] });
    for other in [&bob, &anonymous] {
        // Another's order is answered as one that does not exist, whatever the tool.
        let got = other.call("get_order", id.clone()).await;
        assert_eq!(got.unwrap_error_code(), "ORDER_NOT_FOUND");
        assert_eq!(order_count(other).await, 0);
        let cancelled = other.call("cancel_order", id.clone()).await;
        assert_eq!(cancelled.unwrap_error_code(), "ORDER_NOT_FOUND");
        let receipt = json!({ "order_id": order["order_id"], "email": "eve@example.com" });
        let sent = other.call("send_receipt", receipt).await;
        assert_eq!(sent.unwrap_error_code(), "ORDER_NOT_FOUND");
    }
    assert!(store.outbox().is_empty());
    let mine: Value = alice.call("get_order", id).await.unwrap_output();
    assert_eq!(mine, order, "untouched");
    assert_eq!(order_count(&alice).await, 1);
    // The anonymous caller has a book of its own, like anyone.
    let theirs: Value = anonymous
        .call("place_order", one_of("sku-002"))
        .await
        .unwrap_output();
    assert_eq!(theirs["placed_by"], "anonymous");
    assert_eq!(order_count(&anonymous).await, 1);
    assert_eq!(order_count(&alice).await, 1);
}

#[tokio::test]
async fn orders_are_listed_a_page_at_a_time_oldest_first() {
    let (host, _) = host();
    let mut placed = Vec::new();
    for product in &in_stock()[..25] {
        let order: Value = host
            .call("place_order", one_of(product))
            .await
            .unwrap_output();
        placed.push(order["order_id"].clone());
    }
    let list = |arguments: Value| {
        let host = host.clone();
        async move {
            let list: Value = host.call("list_orders", arguments).await.unwrap_output();
            let ids: Vec<Value> = list["orders"]
                .as_array()
                .unwrap()
                .iter()
                .map(|order| order["order_id"].clone())
                .collect();
            (ids, list.get("next_cursor").cloned())
        }
    };
    let (first, cursor) = list(json!({})).await;
    assert_eq!(first, placed[..20]);
    let cursor = cursor.expect("a next page");
    let (second, last) = list(json!({ "cursor": cursor, "limit": 50 })).await;
    assert_eq!(second, placed[20..]);
    assert_eq!(last, None);
    let (one, _) = list(json!({ "limit": 1 })).await;
    assert_eq!(one, placed[..1]);
    for bad in [
        json!({ "limit": 51 }),
        json!({ "limit": 0 }),
        json!({ "cursor": "x" }),
    ] {
        let refused = host.call("list_orders", bad.clone()).await;
        assert_eq!(refused.unwrap_error_code(), "INVALID_ARGUMENTS", "{bad}");
    }
}

#[tokio::test]
async fn address_fields_are_bounded() {
    let (host, _) = host();
    for (field, longest) in [
        ("name", 100),
        ("street", 200),
        ("city", 100),
        ("postal_code", 16),
    ] {
        let mut args = order_args(1);
        args["ship_to"][field] = json!("x".repeat(longest));
        let placed = host.call("place_order", args.clone()).await;
        assert!(placed.is_ok(), "{field}: {:?}", placed.error());
        args["ship_to"][field] = json!("x".repeat(longest + 1));
        let refused = host.call("place_order", args).await;
        let error = refused.error().unwrap();
        assert_eq!(error.code(), "INVALID_ARGUMENTS", "{field}");
        assert_eq!(
            error.details().unwrap()["errors"][0]["path"],
            format!("/ship_to/{field}")
        );
    }
}
