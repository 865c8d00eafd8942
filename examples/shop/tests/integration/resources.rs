//! The shop's resources and its effect-free tool, through the real runtime, in process.

use carmy::{
    Context, Effect, Runtime,
    execution::{Body, Request},
    testing::TestHost,
};
use serde_json::{Value, json};
use shop::{Store, delivery::Quote};

/// The one content of `uri`, parsed as JSON, or the read's error code.
async fn read_json(runtime: &Runtime, uri: &str) -> Result<Value, String> {
    read_as(runtime, uri, Context::new()).await
}

/// The same, read by `context`.
async fn read_as(runtime: &Runtime, uri: &str, context: Context) -> Result<Value, String> {
    let outcome = runtime.read(Request::read(uri).context(context)).await;
    let contents = match outcome.result {
        Ok(contents) => contents,
        Err(error) => return Err(error.code().to_owned()),
    };
    assert_eq!(contents.len(), 1, "{uri}");
    let content = contents.iter().next().unwrap();
    assert_eq!(content.mime_type_of(), Some("application/json"));
    let Body::Text(text) = content.body() else {
        panic!("{uri} is not text");
    };
    Ok(serde_json::from_str(text).unwrap())
}

#[tokio::test]
async fn the_catalog_lists_every_product_in_order() {
    let runtime = shop::runtime().unwrap();
    let catalog = read_json(&runtime, "shop://catalog").await.unwrap();
    let ids: Vec<&str> = catalog
        .as_array()
        .unwrap()
        .iter()
        .map(|product| product["id"].as_str().unwrap())
        .collect();
    let store = Store::new();
    let expected: Vec<&str> = store
        .products()
        .iter()
        .map(|product| product.id.as_str())
        .collect();
    assert_eq!(ids, expected);
    assert!(ids.len() > 10);
}

#[tokio::test]
async fn a_product_page_shows_the_stock_left_after_an_order() {
    let store = Store::new();
    let host = TestHost::new(shop::runtime_with(store.clone()).unwrap())
        .with_grant("confirm:cancel_order");
    let before = read_json(host.runtime(), "shop://products/sku-001")
        .await
        .unwrap();
    assert_eq!(before["name"], "Wireless Mouse M220");
    assert_eq!(before["stock"], 5);
    let placed = host
        .call(
            "place_order",
            json!({
                "lines": [{ "product_id": "sku-001", "quantity": 2 }],
                "ship_to": {
                    "name": "Ada Lovelace", "street": "12 St James's Square",
                    "city": "London", "postal_code": "SW1Y 4JH", "country": "GB"
                }
            }),
        )
        .await;
    let order: Value = placed.unwrap_output();
    let after = read_json(host.runtime(), "shop://products/sku-001")
        .await
        .unwrap();
    assert_eq!(after["stock"], 3);

    let uri = format!("shop://orders/{}", order["order_id"].as_str().unwrap());
    assert_eq!(read_json(host.runtime(), &uri).await.unwrap(), order);
    host.call("cancel_order", json!({ "order_id": order["order_id"] }))
        .await
        .unwrap_output::<Value>();
    // A resource is read anew every time: the cancellation shows at once.
    let cancelled = read_json(host.runtime(), &uri).await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
}

#[tokio::test]
async fn unknown_products_and_orders_are_not_found() {
    let runtime = shop::runtime().unwrap();
    for uri in ["shop://products/sku-999", "shop://orders/ord-1"] {
        let code = read_json(&runtime, uri).await.unwrap_err();
        assert!(code.ends_with("_NOT_FOUND"), "{uri}: {code}");
    }
    let code = read_json(&runtime, "shop://customers/1").await.unwrap_err();
    assert_eq!(code, "RESOURCE_NOT_FOUND");
}

#[tokio::test]
async fn a_delivery_quote_counts_business_days_and_reads_nothing() {
    let host = TestHost::new(shop::runtime().unwrap());
    let entry = host.runtime().catalog().get("quote_delivery").unwrap();
    assert_eq!(entry.effect(), Effect::None);

    // 2026-12-04 is a Friday: express arrives Monday, standard between Wednesday and Friday.
    let quote = |delivery: &str| {
        host.call(
            "quote_delivery",
            json!({ "delivery": delivery, "ordered_on": "2026-12-04" }),
        )
    };
    let express: Quote = quote("express").await.unwrap_output();
    assert_eq!(express.price_cents, 990);
    assert_eq!(express.earliest.to_string(), "2026-12-07");
    assert_eq!(express.latest, express.earliest);
    let standard: Quote = quote("standard").await.unwrap_output();
    assert_eq!(standard.price_cents, 0);
    assert_eq!(
        (standard.earliest.to_string(), standard.latest.to_string()),
        ("2026-12-09".to_owned(), "2026-12-11".to_owned())
    );

    // Not a day: refused by the input schema's `format: date` before the tool runs.
    for day in ["2026-02-30", "tomorrow", "2026-12-4"] {
        let outcome = host
            .call("quote_delivery", json!({ "ordered_on": day }))
            .await;
        assert_eq!(outcome.unwrap_error_code(), "INVALID_ARGUMENTS", "{day}");
    }
}

#[tokio::test]
async fn an_order_is_read_only_by_whoever_placed_it() {
    let runtime = shop::runtime().unwrap();
    let alice = Context::new().with_principal("alice");
    let order: Value = TestHost::new(runtime.clone())
        .with_context(alice.clone())
        .call(
            "place_order",
            json!({
                "lines": [{ "product_id": "sku-001", "quantity": 1 }],
                "ship_to": {
                    "name": "Ada Lovelace", "street": "12 St James's Square",
                    "city": "London", "postal_code": "SW1Y 4JH", "country": "GB"
                },
                "note": "leave it with the porter"
            }),
        )
        .await
        .unwrap_output();
    let uri = format!("shop://orders/{}", order["order_id"].as_str().unwrap());
    assert_eq!(read_as(&runtime, &uri, alice).await.unwrap(), order);
    for other in [Context::new().with_principal("bob"), Context::new()] {
        let code = read_as(&runtime, &uri, other).await.unwrap_err();
        assert_eq!(code, "ORDER_NOT_FOUND");
    }
}
