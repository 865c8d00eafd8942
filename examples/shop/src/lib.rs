//! The shop: a small store whose tools cover every effect Carmy knows, with its
//! products and orders also readable as resources (see [`resources`]), a prompt for helping a
//! customer with an order ([`prompts`]), and ids completed as the user types ([`completion`]).
//! An order is its placer's alone, whichever way it is reached ([`books`]).
//!
//! | tool | effect | notes |
//! |---|---|---|
//! | `quote_delivery` | none | price and arrival dates of a delivery speed |
//! | `search_products` | read, idempotent | `mouse` matches exactly 4 products |
//! | `get_product` | read, idempotent | `PRODUCT_NOT_FOUND` suggests `search_products` |
//! | `place_order` | write, transactional | safe to retry with a request id; its writes commit with its outcome |
//! | `get_order`, `list_orders` | read, idempotent | the caller's own orders; `list_orders` a page at a time |
//! | `send_receipt` | external_write | writes to the outbox (a stand-in for email) |
//! | `cancel_order` | destructive, idempotent, transactional | needs the host's grant `confirm:cancel_order` |
//! | `sales_report` | read, idempotent | slow; reports progress and honours cancellation |

pub mod books;
pub mod catalog;
pub mod completion;
pub mod delivery;
pub mod orders;
pub mod prompts;
pub mod receipts;
pub mod reports;
pub mod resources;
pub mod store;

use carmy::{BuildError, Carmy, Runtime};

pub use store::Store;

/// The directory of the shop's policy documents (returns, shipping, privacy), served as
/// `file://` resources by `shop mcp|http|unix` unless `--resource-root` names another.
pub const POLICIES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/policies");

/// The shop's tools and resources over a fresh store.
pub fn runtime() -> Result<Runtime, BuildError> {
    runtime_with(Store::new())
}

/// The shop's tools and resources over `store` (tests pass their own to look inside).
pub fn runtime_with(store: Store) -> Result<Runtime, BuildError> {
    shop(store).build()
}

/// The shop, not built yet: its tools, resources and prompt over `store`. The binary adds the
/// policy documents (see [`POLICIES`]) before building it.
pub fn shop(store: Store) -> Carmy {
    Carmy::new()
        .tool(catalog::search_products)
        .tool(catalog::get_product)
        .tool(orders::place_order)
        .tool(orders::get_order)
        .tool(orders::list_orders)
        .tool(receipts::send_receipt)
        .tool(orders::cancel_order)
        .tool(reports::sales_report)
        .tool(delivery::quote_delivery)
        .resource(resources::catalog)
        .resource(resources::product)
        .resource(resources::order)
        .prompt(prompts::order_help)
        // Placing and cancelling orders change `shop://orders/{id}` and the stock that
        // `shop://products/{id}` shows: subscribers are told (on every replica).
        .reports_resource_changes()
        .state(store)
}
