//! What the shop holds in its own process, shared by every tool through `State<Store>`: the
//! catalog as shipped, and the outbox of receipts sent. What changes with orders lives in the
//! runtime's store ([`crate::books`]).

use std::sync::{Arc, Mutex, MutexGuard};

use crate::{catalog::Product, receipts::Receipt};

/// The products as shipped, one per line.
const CATALOG_JSON: &str = include_str!("../data/catalog.json");

/// The products and the outbox. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct Store {
    products: Arc<[Product]>,
    /// `products`' names and tags lower-cased once, in the same order, for case-insensitive search.
    search_keys: Arc<[SearchKey]>,
    /// Receipts sent, oldest first: a stand-in for a mail system, outside the store's records
    /// like a real one would be.
    outbox: Arc<Mutex<Vec<Receipt>>>,
}

/// What a search compares a query with, lower-cased when the catalog is loaded rather than
/// once per product per call.
#[derive(Debug)]
struct SearchKey {
    name: String,
    tags: Vec<String>,
}

impl SearchKey {
    fn of(product: &Product) -> Self {
        Self {
            name: product.name.to_lowercase(),
            tags: product.tags.iter().map(|tag| tag.to_lowercase()).collect(),
        }
    }

    fn matches(&self, query: &str) -> bool {
        self.name.contains(query) || self.tags.iter().any(|tag| tag.contains(query))
    }
}

impl Store {
    /// The shipped catalog and an empty outbox.
    pub fn new() -> Self {
        let products: Vec<Product> =
            serde_json::from_str(CATALOG_JSON).expect("data/catalog.json is valid");
        Self {
            search_keys: products.iter().map(SearchKey::of).collect(),
            products: products.into(),
            outbox: Arc::default(),
        }
    }

    /// The units of `product_id` a new shop has: 5 of every product marked in stock, else 0.
    pub fn units_shipped(&self, product_id: &str) -> u32 {
        match self.product(product_id) {
            Some(product) if product.in_stock => 5,
            _ => 0,
        }
    }

    /// Every product, in catalog order.
    pub fn products(&self) -> &[Product] {
        &self.products
    }

    /// Products whose name or one of whose tags contains `query`, ignoring case, in catalog
    /// order.
    pub fn search<'a>(&'a self, query: &str) -> impl Iterator<Item = &'a Product> + use<'a> {
        let query = query.to_lowercase();
        self.products
            .iter()
            .zip(self.search_keys.iter())
            .filter(move |(_, key)| key.matches(&query))
            .map(|(product, _)| product)
    }

    /// The product with `id`.
    pub fn product(&self, id: &str) -> Option<&Product> {
        self.products.iter().find(|product| product.id == id)
    }

    /// The receipts sent, locked.
    pub fn outbox(&self) -> MutexGuard<'_, Vec<Receipt>> {
        // Nothing holds the lock across an await, so a poisoned lock (a panic elsewhere) still
        // holds consistent data.
        self.outbox
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}
