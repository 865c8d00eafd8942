//! The shop's books: units in stock, orders, and the number of the next order, kept as
//! [`Records`] in the runtime's store. In memory by default; with `--store` in a file, in
//! PostgreSQL or in Redis, where every replica of the shop on that store shares them, and
//! where `place_order` and `cancel_order` (transactional tools) write them in the same step
//! that records their outcome.
//!
//! | collection | key | value |
//! |---|---|---|
//! | `orders` | `ord-1001` | an [`Order`] |
//! | `stock` | `sku-001` | units in stock (absent: as shipped, see [`Store::units_shipped`]) |
//! | `counters` | `next_order` | the number of the next order (absent: 1001) |

use carmy::{AgentError, Records};

use crate::{Store, orders::Order};

const ORDERS: &str = "orders";
const STOCK: &str = "stock";
const COUNTERS: &str = "counters";
const NEXT_ORDER: &str = "next_order";
/// The first order is `ord-1001`.
const FIRST_ORDER: u64 = 1001;

/// Units of `product_id` in stock now.
pub async fn stock(records: &Records, store: &Store, product_id: &str) -> Result<u32, AgentError> {
    Ok(match records.get(STOCK, product_id).await? {
        Some(units) => units,
        None => store.units_shipped(product_id),
    })
}

/// Sets the units of `product_id` in stock (in a transactional tool).
pub fn set_stock(records: &Records, product_id: &str, units: u32) -> Result<(), AgentError> {
    records.put(STOCK, product_id, &units)
}

/// The order `order_id`, if there is one.
pub async fn order(records: &Records, order_id: &str) -> Result<Option<Order>, AgentError> {
    records.get(ORDERS, order_id).await
}

/// Every order, oldest first.
pub async fn orders(records: &Records) -> Result<Vec<Order>, AgentError> {
    let mut orders: Vec<Order> = records
        .list(ORDERS)
        .await?
        .into_iter()
        .map(|(_, order)| order)
        .collect();
    // Keys sort as text (`ord-10000` before `ord-1001`); their numbers say the order.
    orders.sort_by_key(|order: &Order| number_of(&order.order_id));
    Ok(orders)
}

/// The ids of every order, oldest first.
pub async fn order_ids(records: &Records) -> Result<Vec<String>, AgentError> {
    Ok(orders(records)
        .await?
        .into_iter()
        .map(|order| order.order_id)
        .collect())
}

/// Writes `order` (in a transactional tool).
pub fn put_order(records: &Records, order: &Order) -> Result<(), AgentError> {
    records.put(ORDERS, &order.order_id, order)
}

/// Takes the next order id, `ord-1001` first (in a transactional tool: two orders placed at
/// once, on two replicas, cannot both take it).
pub async fn take_order_id(records: &Records) -> Result<String, AgentError> {
    let next: u64 = records
        .get(COUNTERS, NEXT_ORDER)
        .await?
        .unwrap_or(FIRST_ORDER);
    records.put(COUNTERS, NEXT_ORDER, &(next + 1))?;
    Ok(format!("ord-{next}"))
}

fn number_of(order_id: &str) -> u64 {
    order_id
        .strip_prefix("ord-")
        .and_then(|number| number.parse().ok())
        .unwrap_or(u64::MAX)
}
