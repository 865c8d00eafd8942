//! The benchmark catalog: the shop's ~40 products (`examples/shop/data/catalog.json`), and
//! `search_products`.
//!
//! Semantics, which every contender (Rust, Python, TypeScript, the Carmy shop) implements alike:
//!
//! - a product matches when the query, lower-cased, is a substring of its lower-cased name or
//!   of one of its lower-cased tags, and, when `category` is given, its category is that one;
//! - products come back in catalog order, at most `limit` of them (default 10, at most 50);
//! - `total` counts every match, before the limit.
//!
//! The query `mouse` matches exactly 4 products (`sku-001` to `sku-004`); the load driver
//! checks that.

use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The catalog as shipped, one product per line.
pub const CATALOG_JSON: &str = include_str!("../../examples/shop/data/catalog.json");

/// Results returned when the caller gives no `limit`.
pub const DEFAULT_LIMIT: u32 = 10;
/// The largest `limit` the schema allows; contenders that do not validate clamp to it.
pub const MAX_LIMIT: u32 = 50;

/// A product category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Peripherals,
    Displays,
    Audio,
    Storage,
    Networking,
    Accessories,
}

impl Category {
    /// Every category, in schema order.
    pub const ALL: [&'static str; 6] = [
        "peripherals",
        "displays",
        "audio",
        "storage",
        "networking",
        "accessories",
    ];
}

/// One product of the catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Product {
    pub id: String,
    pub name: String,
    pub price_cents: u64,
    pub category: Category,
    pub tags: Vec<String>,
    pub in_stock: bool,
}

/// The arguments of `search_products`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SearchInput {
    /// Text to look for in product names and tags (case-insensitive).
    pub query: String,
    /// Maximum number of products to return (1 to 50, default 10).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Only return products of this category.
    #[serde(default)]
    pub category: Option<Category>,
}

/// The result of `search_products`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SearchOutput {
    /// The matching products, in catalog order, at most `limit` of them.
    pub products: Vec<Product>,
    /// How many products match, before the limit.
    pub total: u32,
}

struct Indexed {
    product: Product,
    name_lower: String,
    tags_lower: Vec<String>,
}

static CATALOG: LazyLock<Vec<Indexed>> = LazyLock::new(|| {
    products()
        .into_iter()
        .map(|product| Indexed {
            name_lower: product.name.to_lowercase(),
            tags_lower: product.tags.iter().map(|t| t.to_lowercase()).collect(),
            product,
        })
        .collect()
});

/// Parses the catalog; panics only if the catalog file is broken, which a test catches.
pub fn products() -> Vec<Product> {
    serde_json::from_str(CATALOG_JSON)
        .expect("examples/shop/data/catalog.json is a list of products")
}

/// Runs `search_products` over the in-memory catalog.
pub fn search(input: &SearchInput) -> SearchOutput {
    let query = input.query.to_lowercase();
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
    let mut products = Vec::new();
    let mut total = 0;
    for entry in CATALOG.iter() {
        let wanted = input.category.is_none_or(|c| c == entry.product.category)
            && (entry.name_lower.contains(&query)
                || entry.tags_lower.iter().any(|t| t.contains(&query)));
        if wanted {
            total += 1;
            if products.len() < limit {
                products.push(entry.product.clone());
            }
        }
    }
    SearchOutput { products, total }
}

/// The product with this id, as the shop's `shop://products/{id}` resource finds it.
pub fn product(id: &str) -> Option<&'static Product> {
    CATALOG
        .iter()
        .map(|entry| &entry.product)
        .find(|product| product.id == id)
}

/// Every product, in catalog order, as the shop's `shop://catalog` resource reads them.
pub fn all_products() -> impl Iterator<Item = &'static Product> {
    CATALOG.iter().map(|entry| &entry.product)
}

/// The tool's description, shared by the contenders.
pub const DESCRIPTION: &str = "Search the product catalog by name or tag.";

/// A hand-written, portable input schema (no `$defs`, no `null` types, every node typed).
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "Text to look for in product names and tags (case-insensitive)."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": "Maximum number of products to return (1 to 50, default 10)."
            },
            "category": {
                "type": "string",
                "enum": Category::ALL,
                "description": "Only return products of this category."
            }
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

/// A hand-written output schema matching [`SearchOutput`].
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "products": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string" },
                        "name": { "type": "string" },
                        "price_cents": { "type": "integer", "minimum": 0 },
                        "category": { "type": "string", "enum": Category::ALL },
                        "tags": { "type": "array", "items": { "type": "string" } },
                        "in_stock": { "type": "boolean" }
                    },
                    "required": ["id", "name", "price_cents", "category", "tags", "in_stock"]
                }
            },
            "total": { "type": "integer", "minimum": 0 }
        },
        "required": ["products", "total"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(q: &str) -> SearchInput {
        SearchInput {
            query: q.into(),
            limit: None,
            category: None,
        }
    }

    #[test]
    fn catalog_has_forty_products_with_unique_ids() {
        let products = products();
        assert_eq!(products.len(), 40);
        let mut ids: Vec<_> = products.iter().map(|p| p.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 40);
    }

    #[test]
    fn mouse_matches_exactly_four() {
        let out = search(&query("mouse"));
        assert_eq!(out.total, 4);
        let ids: Vec<_> = out.products.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["sku-001", "sku-002", "sku-003", "sku-004"]);
        assert_eq!(search(&query("MoUsE")).total, 4);
    }

    #[test]
    fn limit_and_category_filter() {
        let mut input = query("");
        assert_eq!(search(&input).total, 40);
        assert_eq!(search(&input).products.len(), DEFAULT_LIMIT as usize);
        input.limit = Some(500);
        assert_eq!(search(&input).products.len(), 40);
        input.category = Some(Category::Audio);
        assert!(
            search(&input)
                .products
                .iter()
                .all(|p| p.category == Category::Audio)
        );
        assert_eq!(search(&query("wireless")).total, 5);
    }
}
