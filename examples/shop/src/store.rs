//! The store's state, shared by every tool through `State<Store>`.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, MutexGuard},
};

use crate::{catalog::Product, orders::Order, receipts::Receipt};

/// The products as shipped, one per line.
const CATALOG_JSON: &str = include_str!("../data/catalog.json");

/// Products, stock, orders and the outbox. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct Store {
    products: Arc<[Product]>,
    /// `products`' names and tags lower-cased once, in the same order, for case-insensitive search.
    search_keys: Arc<[SearchKey]>,
    books: Arc<Mutex<Books>>,
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

/// Everything that changes.
#[derive(Debug, Default)]
pub struct Books {
    /// Units in stock, by product id.
    pub stock: BTreeMap<String, u32>,
    /// Orders by id, in placement order.
    pub orders: BTreeMap<String, Order>,
    /// Receipts sent, oldest first.
    pub outbox: Vec<Receipt>,
    /// The number of the next order.
    pub next_order: u64,
}

impl Store {
    /// The shipped catalog, with 5 units of every product marked in stock.
    pub fn new() -> Self {
        let products: Vec<Product> =
            serde_json::from_str(CATALOG_JSON).expect("data/catalog.json is valid");
        let stock = products
            .iter()
            .map(|product| (product.id.clone(), if product.in_stock { 5 } else { 0 }))
            .collect();
        Self {
            search_keys: products.iter().map(SearchKey::of).collect(),
            products: products.into(),
            books: Arc::new(Mutex::new(Books {
                stock,
                next_order: 1001,
                ..Books::default()
            })),
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

    /// The changing part, locked.
    pub fn books(&self) -> MutexGuard<'_, Books> {
        // Tools never leave the books half-updated across an await, so a poisoned lock (a panic
        // elsewhere) still holds consistent data.
        self.books
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}
