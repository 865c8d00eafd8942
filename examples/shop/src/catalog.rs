//! Browsing: `search_products` and `get_product`.

use carmy::{AgentError, Context, State, records::Records, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Store, books};

/// A product category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Peripherals,
    Displays,
    Audio,
    Storage,
    Networking,
    Accessories,
}

/// One product.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Product {
    /// Stable id, e.g. `sku-001`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Unit price in cents.
    pub price_cents: u64,
    /// Category.
    pub category: Category,
    /// Search tags.
    pub tags: Vec<String>,
    /// Whether the product can be ordered at all.
    pub in_stock: bool,
}

/// Arguments of `search_products`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchInput {
    /// Text to look for in product names and tags (case-insensitive).
    pub query: String,
    /// Maximum number of products to return (1 to 50, default 10).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
    /// Only return products of this category.
    pub category: Option<Category>,
}

/// Result of `search_products`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SearchOutput {
    /// The matching products, in catalog order, at most `limit` of them.
    pub products: Vec<Product>,
    /// How many products match, before the limit.
    pub total: u32,
}

/// Search the product catalog by name or tag. Returns matching products in catalog order.
#[tool(effect = "read", idempotent, title = "Search products")]
pub async fn search_products(
    input: SearchInput,
    store: State<Store>,
) -> Result<SearchOutput, AgentError> {
    let limit = input.limit.unwrap_or(10) as usize;
    let matches = store.search(&input.query).filter(|product| {
        input
            .category
            .is_none_or(|category| product.category == category)
    });
    let mut products = Vec::with_capacity(limit.min(16));
    let mut total = 0;
    for product in matches {
        total += 1;
        if products.len() < limit {
            products.push(product.clone());
        }
    }
    Ok(SearchOutput { products, total })
}

/// Arguments of `get_product`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetProductInput {
    /// The product id, e.g. `sku-001`.
    pub id: String,
}

/// Product details with the units in stock now.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProductDetails {
    /// The product.
    #[serde(flatten)]
    pub product: Product,
    /// Units that can be ordered now.
    pub stock: u32,
}

/// Get one product by id, with its current stock.
#[tool(effect = "read", idempotent, title = "Get a product")]
pub async fn get_product(
    input: GetProductInput,
    store: State<Store>,
    ctx: &Context,
) -> Result<ProductDetails, AgentError> {
    product_details(&store, ctx.records(), &input.id).await
}

/// The product with `id` and its stock now: `get_product`'s answer, and the
/// `shop://products/{id}` resource's.
pub(crate) async fn product_details(
    store: &Store,
    records: &Records,
    id: &str,
) -> Result<ProductDetails, AgentError> {
    let product = store.product(id).ok_or_else(|| product_not_found(id))?;
    let stock = books::stock(records, store, id).await?;
    Ok(ProductDetails {
        product: product.clone(),
        stock,
    })
}

pub(crate) fn product_not_found(id: &str) -> AgentError {
    AgentError::not_found("PRODUCT_NOT_FOUND", format!("no product with id `{id}`"))
        .with_details(serde_json::json!({ "id": id }))
        .with_next_tool("search_products")
}
