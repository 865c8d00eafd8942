//! The shop's books: units in stock, orders, and the number of the next order, kept as
//! [`Records`] in the runtime's store. In memory by default; with `--store` in a file, in
//! PostgreSQL or in Redis, where every replica of the shop on that store shares them, and
//! where `place_order` and `cancel_order` (transactional tools) write them in the same step
//! that records their outcome.
//!
//! An order belongs to whoever placed it ([`owner`]): only they see it, list it or act on it;
//! to anyone else it does not exist.
//!
//! | collection | key | value |
//! |---|---|---|
//! | `orders` | `ord-1001` | an [`Order`] |
//! | `orders_of` | the owner (`alice`) | the ids of the owner's orders, oldest first |
//! | `stock` | `sku-001` | units in stock (absent: as shipped, see [`Store::units_shipped`]) |
//! | `counters` | `next_order` | the number of the next order (absent: 1001) |

use carmy::{AgentError, Context, records::Records};

use crate::{Store, orders::Order};

const ORDERS: &str = "orders";
const ORDERS_OF: &str = "orders_of";
const STOCK: &str = "stock";
const COUNTERS: &str = "counters";
const NEXT_ORDER: &str = "next_order";
/// The first order is `ord-1001`.
const FIRST_ORDER: u64 = 1001;
/// Who the caller is when the host named nobody.
const ANONYMOUS: &str = "anonymous";

/// Whose books a call reads and writes: the principal the host named for it (a token's over
/// HTTP, `--principal` on stdio), never one of its arguments; `anonymous` when it named none.
pub fn owner(ctx: &Context) -> &str {
    ctx.principal().unwrap_or(ANONYMOUS)
}

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

/// The order `order_id`, if there is one and `owner` placed it.
pub async fn order(
    records: &Records,
    owner: &str,
    order_id: &str,
) -> Result<Option<Order>, AgentError> {
    let order: Option<Order> = records.get(ORDERS, order_id).await?;
    Ok(order.filter(|order| order.placed_by == owner))
}

/// The ids of the orders `owner` placed, oldest first.
pub async fn order_ids(records: &Records, owner: &str) -> Result<Vec<String>, AgentError> {
    Ok(records.get(ORDERS_OF, owner).await?.unwrap_or_default())
}

/// At most `limit` of the orders `owner` placed, oldest first, from the first placed after the
/// order `after` (from the first, without it); and whether there are more.
pub async fn orders_of(
    records: &Records,
    owner: &str,
    after: Option<&str>,
    limit: usize,
) -> Result<(Vec<Order>, bool), AgentError> {
    let ids = order_ids(records, owner).await?;
    let after = after.map_or(0, number_of);
    let mut ids = ids.iter().filter(|id| number_of(id) > after);
    let mut page = Vec::new();
    for id in ids.by_ref().take(limit) {
        if let Some(order) = records.get(ORDERS, id).await? {
            page.push(order);
        }
    }
    Ok((page, ids.next().is_some()))
}

/// Every order of every owner, oldest first (the shop's own figures).
pub async fn all_orders(records: &Records) -> Result<Vec<Order>, AgentError> {
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

/// Writes a new `order`, and adds it to its owner's (in a transactional tool).
pub async fn add_order(records: &Records, order: &Order) -> Result<(), AgentError> {
    let mut ids = order_ids(records, &order.placed_by).await?;
    ids.push(order.order_id.clone());
    records.put(ORDERS_OF, &order.placed_by, &ids)?;
    put_order(records, order)
}

/// Writes `order` as it stands now (in a transactional tool).
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
