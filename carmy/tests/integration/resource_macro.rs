//! What `#[resource]` generates, observed at run time: the metadata in the catalog, the URI's
//! variables bound to the input, state and context injected, error conversion, direct calls,
//! and what `build()` checks that the macro cannot.

use std::time::Duration;

use carmy::{
    Content, Contents, Runtime,
    catalog::{BuildProblem, Resource, ResourceEntry},
    execution::{Body, ExecutionStatus, ReadResource, Request},
    prelude::*,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
struct ProductRef {
    /// `sku-` and three digits.
    #[schemars(regex(pattern = r"^sku-[0-9]{3}$"))]
    id: String,
}

#[derive(Debug)]
struct Catalog {
    products: Vec<(&'static str, &'static str)>,
}

#[derive(Debug)]
enum ShopError {
    NoSuchProduct(String),
}

impl From<ShopError> for AgentError {
    fn from(error: ShopError) -> Self {
        match error {
            ShopError::NoSuchProduct(id) => {
                AgentError::not_found("PRODUCT_NOT_FOUND", format!("no product {id}"))
            }
        }
    }
}

/// One product, as JSON.
///
/// Read by id.
#[resource(uri = "shop://products/{id}", mime_type = "application/json")]
async fn product(input: ProductRef, catalog: State<Catalog>) -> Result<Content, ShopError> {
    let (id, name) = catalog
        .products
        .iter()
        .find(|(id, _)| *id == input.id)
        .ok_or(ShopError::NoSuchProduct(input.id))?;
    Ok(Content::json(&serde_json::json!({ "id": id, "name": name })).expect("serializes"))
}

#[derive(Debug, Deserialize, JsonSchema)]
struct LineRef {
    order: String,
    line: String,
}

/// Not this text.
#[resource(
    uri = "shop://orders/{order}/lines/{line}.txt",
    name = "order_line",
    title = "An order line",
    description = "One line of an order, for whoever reads it.",
    mime_type = "text/plain; charset=utf-8",
    timeout = "2s"
)]
async fn line_for_reader(
    ctx: &Context,
    LineRef { order, line }: LineRef,
) -> Result<String, AgentError> {
    let reader = ctx.principal().unwrap_or("anonymous");
    Ok(format!("{order}#{line} for {reader}"))
}

/// The store's logo.
#[resource(uri = "shop://brand/logo.png", mime_type = "image/png")]
async fn logo() -> Result<Vec<u8>, AgentError> {
    Ok(vec![0x89, b'P', b'N', b'G'])
}

/// Every product, one content each, at its own URI.
#[resource(uri = "shop://products")]
async fn products(catalog: State<Catalog>, ctx: Context) -> Result<Contents, AgentError> {
    let _ = ctx;
    Ok(catalog
        .products
        .iter()
        .map(|(id, name)| Content::text(*name).uri(format!("shop://products/{id}")))
        .collect())
}

fn catalog() -> Catalog {
    Catalog {
        products: vec![("sku-001", "Mouse"), ("sku-002", "Keyboard")],
    }
}

fn runtime() -> Runtime {
    Carmy::new()
        .resource(product)
        .resource(line_for_reader)
        .resource(logo)
        .resource(products)
        .state(catalog())
        .build()
        .expect("valid catalog")
}

fn entry<'a>(runtime: &'a Runtime, name: &str) -> &'a ResourceEntry {
    runtime
        .catalog()
        .resources()
        .find(|entry| entry.name() == name)
        .unwrap_or_else(|| panic!("no resource {name}"))
}

async fn read(runtime: &Runtime, request: Request<ReadResource>) -> Vec<Content> {
    let outcome = runtime.read(request).await;
    match outcome.result {
        Ok(contents) => contents.into_vec(),
        Err(error) => panic!("{} failed: {error:?}", outcome.execution_id),
    }
}

#[test]
fn metadata_comes_from_the_attribute_and_the_doc_comment() {
    let runtime = runtime();

    let found = entry(&runtime, "product");
    assert_eq!(found.uri(), "shop://products/{id}");
    assert!(found.is_template());
    assert_eq!(found.description(), "One product, as JSON.\n\nRead by id.");
    assert_eq!(found.title(), None);
    assert_eq!(found.mime_type(), Some("application/json"));

    let found = entry(&runtime, "order_line");
    assert_eq!(found.uri(), "shop://orders/{order}/lines/{line}.txt");
    assert_eq!(found.title(), Some("An order line"));
    assert_eq!(
        found.description(),
        "One line of an order, for whoever reads it."
    );
    assert_eq!(found.mime_type(), Some("text/plain; charset=utf-8"));
    assert_eq!(found.timeout(), Duration::from_secs(2));

    let found = entry(&runtime, "logo");
    assert!(!found.is_template());
    assert_eq!(found.mime_type(), Some("image/png"));
}

#[test]
fn the_spec_is_a_const() {
    const URI: &str = <line_for_reader as Resource>::SPEC.uri();
    assert_eq!(URI, "shop://orders/{order}/lines/{line}.txt");
}

#[tokio::test]
async fn variables_bind_to_the_input_and_state_is_injected() {
    let runtime = runtime();
    let contents = read(&runtime, Request::read("shop://products/sku-002")).await;
    assert_eq!(contents.len(), 1);
    assert_eq!(
        contents[0].body(),
        &Body::Text(r#"{"id":"sku-002","name":"Keyboard"}"#.into())
    );
    assert_eq!(contents[0].mime_type_of(), Some("application/json"));

    // Two variables, decoded, around a literal `.txt`; the context is the reader's.
    let contents = read(
        &runtime,
        Request::read("shop://orders/ord%201/lines/2.txt")
            .context(Context::new().with_principal("alice")),
    )
    .await;
    assert_eq!(contents[0].body(), &Body::Text("ord 1#2 for alice".into()));
}

#[tokio::test]
async fn bytes_are_a_blob_and_contents_stay_several() {
    let runtime = runtime();
    let contents = read(&runtime, Request::read("shop://brand/logo.png")).await;
    assert_eq!(
        contents[0].body(),
        &Body::Blob(vec![0x89, b'P', b'N', b'G'])
    );

    let contents = read(&runtime, Request::read("shop://products")).await;
    let listed: Vec<_> = contents
        .iter()
        .map(|content| (content.uri_of().unwrap(), content.body().clone()))
        .collect();
    assert_eq!(
        listed,
        [
            ("shop://products/sku-001", Body::Text("Mouse".into())),
            ("shop://products/sku-002", Body::Text("Keyboard".into())),
        ]
    );
}

#[tokio::test]
async fn errors_convert_into_agent_errors() {
    let outcome = runtime()
        .read(Request::read("shop://products/sku-404"))
        .await;
    assert_eq!(outcome.status, ExecutionStatus::Failed);
    assert_eq!(outcome.unwrap_error_code(), "PRODUCT_NOT_FOUND");
    assert_eq!(outcome.error().unwrap().message(), "no product sku-404");
}

#[tokio::test]
async fn the_input_schema_guards_the_function() {
    // `sku-1` breaks the input's pattern: the function never runs.
    let outcome = runtime().read(Request::read("shop://products/sku-1")).await;
    assert_eq!(outcome.status, ExecutionStatus::Rejected);
    assert_eq!(outcome.unwrap_error_code(), carmy::codes::INVALID_ARGUMENTS);
}

#[test]
fn build_reports_variables_that_are_not_the_inputs_fields() {
    /// `{sku}` is not a field of `ProductRef`: the macro cannot know, `build()` does.
    #[resource(uri = "shop://items/{sku}")]
    async fn item(input: ProductRef) -> Result<String, AgentError> {
        Ok(input.id)
    }

    #[derive(Deserialize, JsonSchema)]
    struct Numbered {
        n: u32,
    }

    /// `{n}` is a field, but a URI binds text.
    #[resource(uri = "shop://numbers/{n}")]
    async fn number(input: Numbered) -> Result<String, AgentError> {
        Ok(input.n.to_string())
    }

    let error = Carmy::new()
        .resource(item)
        .resource(number)
        .build()
        .unwrap_err();
    let problems: Vec<_> = error
        .problems()
        .iter()
        .map(|problem| match problem {
            BuildProblem::InvalidResource { resource, reason } => {
                (resource.as_str(), reason.as_str())
            }
            other => panic!("unexpected problem: {other}"),
        })
        .collect();
    assert_eq!(
        problems,
        [
            (
                "item",
                "`{sku}` in `shop://items/{sku}` is not a field of the resource's input"
            ),
            (
                "number",
                "the field `n` is bound from the URI, so it must be a string"
            ),
        ]
    );
}

#[test]
fn a_missing_state_is_reported_at_build() {
    let error = Carmy::new().resource(product).build().unwrap_err();
    assert!(
        matches!(
            error.problems(),
            [BuildProblem::MissingState { type_name, resources, .. }]
                if resources == &["product"] && type_name.ends_with("Catalog")
        ),
        "{error}"
    );
}

#[tokio::test]
async fn resources_can_be_called_directly() {
    let state = || State::new(catalog());
    let input = || ProductRef {
        id: "sku-001".into(),
    };
    let boxed = product(input(), state()).await.unwrap();
    let unboxed = product::call(input(), state()).await.unwrap();
    assert_eq!(boxed, unboxed);
    assert!(matches!(
        product::call(ProductRef { id: "x".into() }, state()).await,
        Err(ShopError::NoSuchProduct(id)) if id == "x"
    ));

    let ctx = Context::new().with_principal("bob");
    let line = line_for_reader(
        &ctx,
        LineRef {
            order: "o".into(),
            line: "1".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(line, "o#1 for bob");
    assert_eq!(logo().await.unwrap().len(), 4);
    assert_eq!(tokio::spawn(logo()).await.unwrap().unwrap().len(), 4);
}

#[test]
fn the_resource_is_a_copyable_unit_value() {
    let resource = logo;
    let copy = resource;
    assert_eq!(format!("{resource:?} {copy:?}"), "logo logo");
    let _: logo = Default::default();
}
