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
    books: Arc<Mutex<Books>>,
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
