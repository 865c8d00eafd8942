//! The shop's prompt and its completions, through the real runtime, in process, and over MCP
//! where the answer's form is the point.

use crate::common;

use carmy::{
    Context, MessageContent, Role,
    execution::{Body, CompletionTarget, Request},
    testing::TestHost,
};
use serde_json::{Value, json};
use shop::Store;

fn host() -> TestHost {
    TestHost::new(shop::runtime_with(Store::new()).unwrap())
}

/// Places an order of one `product_id` and returns it.
async fn place(host: &TestHost, product_id: &str) -> Value {
    host.call(
        "place_order",
        json!({
            "lines": [{ "product_id": product_id, "quantity": 1 }],
            "ship_to": {
                "name": "Ada Lovelace", "street": "12 St James's Square",
                "city": "London", "postal_code": "SW1Y 4JH", "country": "GB"
            }
        }),
    )
    .await
    .unwrap_output()
}

#[tokio::test]
async fn order_help_embeds_the_order_and_the_issue() {
    let host = host();
    let order = place(&host, "sku-002").await;
    let id = order["order_id"].as_str().unwrap();
    let outcome = host
        .runtime()
        .get_prompt(
            Request::get_prompt("order_help")
                .argument("order_id", id)
                .argument("issue", "It has not arrived."),
        )
        .await;
    let messages = outcome.result.unwrap();
    assert_eq!(
        messages.description_of(),
        Some(&*format!("Help with order {id}"))
    );
    let [embedded, question] = messages.iter().collect::<Vec<_>>()[..] else {
        panic!("two messages: {messages:?}");
    };
    assert_eq!(embedded.role(), Role::User);
    let MessageContent::Resource(content) = embedded.content() else {
        panic!("the order is embedded: {embedded:?}");
    };
    assert_eq!(content.uri_of(), Some(&*format!("shop://orders/{id}")));
    assert_eq!(content.mime_type_of(), Some("application/json"));
    let Body::Text(text) = content.body() else {
        panic!("JSON is text");
    };
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), order);
    let MessageContent::Text(text) = question.content() else {
        panic!("the question is text: {question:?}");
    };
    assert!(
        text.contains(id) && text.contains("It has not arrived."),
        "{text}"
    );
}

#[tokio::test]
async fn order_help_refuses_a_missing_or_unknown_order() {
    let host = host();
    let missing = host
        .runtime()
        .get_prompt(Request::get_prompt("order_help"))
        .await;
    let error = missing.result.unwrap_err();
    assert_eq!(error.code(), "INVALID_ARGUMENTS");
    assert!(error.message().contains("order_id"), "{}", error.message());
    let unknown = host
        .runtime()
        .get_prompt(Request::get_prompt("order_help").argument("order_id", "ord-9999"))
        .await;
    assert_eq!(unknown.result.unwrap_err().code(), "ORDER_NOT_FOUND");
}

#[tokio::test]
async fn order_ids_are_completed_from_the_orders_placed() {
    let host = host();
    let complete = |target: CompletionTarget, argument: &str, typed: &str| {
        let request = Request::complete(target, argument, typed);
        async { host.runtime().complete(request).await.result.unwrap() }
    };
    let prompt = || CompletionTarget::Prompt("order_help".into());
    assert!(complete(prompt(), "order_id", "").await.values().is_empty());
    let first = place(&host, "sku-001").await["order_id"].clone();
    let second = place(&host, "sku-002").await["order_id"].clone();
    let all = complete(prompt(), "order_id", "ord-").await;
    assert_eq!(
        all.values(),
        [first.as_str().unwrap(), second.as_str().unwrap()]
    );
    let one = complete(prompt(), "order_id", second.as_str().unwrap()).await;
    assert_eq!(one.values(), [second.as_str().unwrap()]);
    // The order template completes the same ids.
    let template = CompletionTarget::Resource("shop://orders/{order_id}".into());
    assert_eq!(
        complete(template, "order_id", "ord-").await.values(),
        all.values()
    );
}

#[tokio::test]
async fn product_ids_are_completed_in_catalog_order() {
    let host = host();
    let template = || CompletionTarget::Resource("shop://products/{id}".into());
    let request = Request::complete(template(), "id", "sku-00");
    let completions = host.runtime().complete(request).await.result.unwrap();
    let expected: Vec<String> = Store::new()
        .products()
        .iter()
        .map(|product| product.id.clone())
        .filter(|id| id.starts_with("sku-00"))
        .collect();
    assert_eq!(completions.values(), expected);
    assert!(expected.len() > 1);
    let none = Request::complete(template(), "id", "nothing");
    let none = host.runtime().complete(none).await.result.unwrap();
    assert_eq!((none.values().len(), none.total()), (0, 0));
}

#[test]
fn an_order_that_does_not_exist_is_the_callers_mistake_over_mcp() {
    let mut shop = common::StdioShop::start(&[]);
    shop.send(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "prompts/get",
        "params": { "name": "order_help", "arguments": { "order_id": "ord-42" } }
    }));
    let answer = shop.receive();
    // Invalid params, as a missing argument is, with the agent's error in `data`.
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let error = &answer["error"]["data"]["error"];
    assert_eq!(error["code"], "ORDER_NOT_FOUND", "{answer}");
    assert_eq!(error["category"], "not_found");
    shop.send(&json!({
        "jsonrpc": "2.0", "id": 2, "method": "prompts/get",
        "params": { "name": "order_help", "arguments": {} }
    }));
    let missing = shop.receive();
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
}

/// What `context` gets: `order_help` rendered for `order_id` (its error code, if it fails),
/// and the ids suggested for its `order_id` and for the order template's.
async fn seen_by(
    host: &TestHost,
    context: &Context,
    order_id: &str,
) -> (Result<usize, String>, Vec<String>, Vec<String>) {
    let runtime = host.runtime();
    let render = Request::get_prompt("order_help")
        .argument("order_id", order_id)
        .context(context.clone());
    let rendered = match runtime.get_prompt(render).await.result {
        Ok(messages) => Ok(messages.len()),
        Err(error) => Err(error.code().to_owned()),
    };
    let mut suggested = Vec::new();
    for target in [
        CompletionTarget::Prompt("order_help".into()),
        CompletionTarget::Resource("shop://orders/{order_id}".into()),
    ] {
        let request = Request::complete(target, "order_id", "ord-").context(context.clone());
        suggested.push(match runtime.complete(request).await.result {
            Ok(completions) => completions.values().to_vec(),
            Err(error) => vec![error.code().to_owned()],
        });
    }
    let template = suggested.pop().unwrap();
    (rendered, suggested.pop().unwrap(), template)
}

#[tokio::test]
async fn order_help_and_its_completions_show_only_the_callers_own_orders() {
    let host = host();
    let alice = Context::new().with_principal("alice");
    let order = host
        .clone()
        .with_context(alice.clone())
        .call(
            "place_order",
            json!({
                "lines": [{ "product_id": "sku-001", "quantity": 1 }],
                "ship_to": {
                    "name": "Ada Lovelace", "street": "12 St James's Square",
                    "city": "London", "postal_code": "SW1Y 4JH", "country": "GB"
                }
            }),
        )
        .await
        .unwrap_output::<Value>();
    let id = order["order_id"].as_str().unwrap();
    let (rendered, prompt, template) = seen_by(&host, &alice, id).await;
    assert_eq!(rendered, Ok(2));
    assert_eq!(
        (prompt, template),
        (vec![id.to_owned()], vec![id.to_owned()])
    );
    for other in [Context::new().with_principal("bob"), Context::new()] {
        let (rendered, prompt, template) = seen_by(&host, &other, id).await;
        assert_eq!(rendered, Err("ORDER_NOT_FOUND".to_owned()));
        assert!(
            prompt.is_empty() && template.is_empty(),
            "{prompt:?} {template:?}"
        );
    }
    // Alice's token, allowed only the product resources, gets her order neither embedded in
    // the prompt nor named by the prompt's completion (the template is refused outright).
    let products_only = alice.with_access("resource:shop://products/*".parse().unwrap());
    let (rendered, prompt, template) = seen_by(&host, &products_only, id).await;
    assert_eq!(rendered, Err("RESOURCE_NOT_ALLOWED".to_owned()));
    assert!(prompt.is_empty(), "{prompt:?}");
    assert_eq!(template, ["RESOURCE_NOT_ALLOWED"]);
}
