//! Orders: `place_order` (write), `get_order` and `list_orders` (read), `cancel_order`
//! (destructive). An order is its placer's: the principal the host named for the call, never an
//! argument ([`books::owner`]). Another's order is answered as one that does not exist.

use std::collections::BTreeMap;

use carmy::{AgentError, Context, State, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Store, books, catalog::product_not_found, delivery::Delivery};

/// One line of an order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderLine {
    /// The product id, e.g. `sku-001`.
    pub product_id: String,
    /// Units, 1 to 5.
    #[schemars(range(min = 1, max = 5))]
    pub quantity: u32,
}

/// A postal address. Every field is bounded, as everything a caller sends that the shop keeps
/// and sends back should be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Address {
    /// Recipient's full name.
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
    /// Street and number.
    #[schemars(length(min = 1, max = 200))]
    pub street: String,
    /// City.
    #[schemars(length(min = 1, max = 100))]
    pub city: String,
    /// Postal code.
    #[schemars(length(min = 1, max = 16))]
    pub postal_code: String,
    /// ISO 3166-1 alpha-2 country code, e.g. `FR`.
    #[schemars(length(equal = 2))]
    pub country: String,
}

/// Where an order stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    /// Placed and paid; not shipped yet.
    Placed,
    /// Cancelled and refunded.
    Cancelled,
}

/// An order as the store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Order {
    /// Order id, e.g. `ord-1001`.
    pub order_id: String,
    /// Where it stands.
    pub status: OrderStatus,
    /// What was ordered.
    pub lines: Vec<OrderLine>,
    /// Where it goes.
    pub ship_to: Address,
    /// How fast.
    pub delivery: Delivery,
    /// Products plus delivery, in cents.
    pub total_cents: u64,
    /// A note for the packer, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Who placed it: the principal the host named for the call (`anonymous` when it named
    /// none). Only they see it.
    pub placed_by: String,
}

/// Arguments of `place_order`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlaceOrderInput {
    /// Products and quantities; at least one line.
    #[schemars(length(min = 1, max = 20))]
    pub lines: Vec<OrderLine>,
    /// Shipping address.
    pub ship_to: Address,
    /// Delivery speed (default `standard`).
    #[serde(default)]
    pub delivery: Delivery,
    /// A note for the packer.
    #[schemars(length(max = 500))]
    pub note: Option<String>,
}

/// Place an order and take the units out of stock. Not idempotent by itself: send a request id
/// (`_meta["carmy/request_id"]`) so a retry returns the same order instead of a second one.
// Transactional: the order, the stock it takes and the order number are written in the step
// that records the call's outcome, so a crash leaves the order placed and replayed, or not
// placed at all, never "maybe".
// A 5 s deadline: placing an order takes milliseconds, and a retry whose first try died with
// its replica waits for the claim to run out (twice the deadline and a little more).
#[tool(
    effect = "write",
    transactional,
    title = "Place an order",
    timeout = "5s"
)]
pub async fn place_order(
    input: PlaceOrderInput,
    store: State<Store>,
    ctx: &Context,
) -> Result<Order, AgentError> {
    let records = ctx.records();
    let mut total_cents = input.delivery.price_cents();
    for line in &input.lines {
        let product = store
            .product(&line.product_id)
            .ok_or_else(|| product_not_found(&line.product_id))?;
        total_cents += product.price_cents * u64::from(line.quantity);
    }
    // What each product is ordered in all, checked against its stock before anything is
    // taken, so a refused order changes nothing.
    let mut ordered: BTreeMap<&str, u32> = BTreeMap::new();
    for line in &input.lines {
        *ordered.entry(&line.product_id).or_default() += line.quantity;
    }
    let mut left = Vec::with_capacity(ordered.len());
    for (&product_id, &quantity) in &ordered {
        let available = books::stock(records, &store, product_id).await?;
        if quantity > available {
            return Err(AgentError::conflict(
                "OUT_OF_STOCK",
                format!("only {available} of `{product_id}` in stock"),
            )
            .with_details(serde_json::json!({ "product_id": product_id, "available": available }))
            .with_next_tool("search_products"));
        }
        left.push((product_id, available - quantity));
    }
    for (product_id, units) in left {
        books::set_stock(records, product_id, units)?;
        ctx.resource_updated(format!("shop://products/{product_id}"));
    }
    let order = Order {
        order_id: books::take_order_id(records).await?,
        status: OrderStatus::Placed,
        lines: input.lines,
        ship_to: input.ship_to,
        delivery: input.delivery,
        total_cents,
        note: input.note,
        placed_by: books::owner(ctx).to_owned(),
    };
    books::add_order(records, &order).await?;
    // Told to subscribers once the order is committed.
    ctx.resource_updated(format!("shop://orders/{}", order.order_id));
    tracing::info!(order_id = %order.order_id, total_cents, "order placed");
    Ok(order)
}

/// Arguments naming one order.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OrderRef {
    /// The order id, e.g. `ord-1001`.
    pub order_id: String,
}

/// Get one of your orders by id.
#[tool(effect = "read", idempotent, title = "Get an order")]
pub async fn get_order(input: OrderRef, ctx: &Context) -> Result<Order, AgentError> {
    books::order(ctx.records(), books::owner(ctx), &input.order_id)
        .await?
        .ok_or_else(|| order_not_found(&input.order_id))
}

/// Arguments of `list_orders`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListOrdersInput {
    /// Where to go on from: the `next_cursor` of the page before; unset: the first page.
    #[schemars(regex(pattern = r"^ord-[0-9]{1,18}$"))]
    pub cursor: Option<String>,
    /// Orders per page, 1 to 50 (default 20).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
}

/// One page of your orders, oldest first.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct OrderList {
    /// The orders.
    pub orders: Vec<Order>,
    /// Set when there are more: pass it as `cursor` for the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// List your orders, oldest first, a page at a time.
#[tool(effect = "read", idempotent, title = "List orders")]
pub async fn list_orders(input: ListOrdersInput, ctx: &Context) -> Result<OrderList, AgentError> {
    let limit = input.limit.unwrap_or(20) as usize;
    let (orders, more) = books::orders_of(
        ctx.records(),
        books::owner(ctx),
        input.cursor.as_deref(),
        limit,
    )
    .await?;
    let next_cursor = more
        .then(|| orders.last().map(|order| order.order_id.clone()))
        .flatten();
    Ok(OrderList {
        orders,
        next_cursor,
    })
}

/// Arguments of `cancel_order`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CancelInput {
    /// The order to cancel.
    pub order_id: String,
    /// Why, for the records.
    pub reason: Option<String>,
}

/// What a cancellation did.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Cancellation {
    /// The cancelled order.
    pub order_id: String,
    /// Always `cancelled`.
    pub status: OrderStatus,
    /// Amount refunded, in cents.
    pub refunded_cents: u64,
}

/// Cancel one of your orders, refund it and put its units back in stock. Cannot be undone, so
/// the host must confirm it (grant `confirm:cancel_order`). Cancelling a cancelled order
/// changes nothing and answers the same.
#[tool(
    effect = "destructive",
    idempotent,
    transactional,
    title = "Cancel an order"
)]
pub async fn cancel_order(
    input: CancelInput,
    store: State<Store>,
    ctx: &Context,
) -> Result<Cancellation, AgentError> {
    let records = ctx.records();
    let mut order = books::order(records, books::owner(ctx), &input.order_id)
        .await?
        .ok_or_else(|| order_not_found(&input.order_id))?;
    if order.status == OrderStatus::Cancelled {
        // Declared idempotent: a second cancellation (a retry, which runs again rather than
        // being replayed) changes nothing and answers as the first did.
        return Ok(Cancellation {
            order_id: input.order_id,
            status: OrderStatus::Cancelled,
            refunded_cents: order.total_cents,
        });
    }
    order.status = OrderStatus::Cancelled;
    let mut returned: BTreeMap<&str, u32> = BTreeMap::new();
    for line in &order.lines {
        *returned.entry(&line.product_id).or_default() += line.quantity;
    }
    for (product_id, quantity) in returned {
        let units = books::stock(records, &store, product_id).await?;
        books::set_stock(records, product_id, units + quantity)?;
        ctx.resource_updated(format!("shop://products/{product_id}"));
    }
    books::put_order(records, &order)?;
    ctx.resource_updated(format!("shop://orders/{}", input.order_id));
    let refunded_cents = order.total_cents;
    tracing::info!(order_id = %input.order_id, refunded_cents, "order cancelled");
    Ok(Cancellation {
        order_id: input.order_id,
        status: OrderStatus::Cancelled,
        refunded_cents,
    })
}

pub(crate) fn order_not_found(id: &str) -> AgentError {
    AgentError::not_found("ORDER_NOT_FOUND", format!("no order with id `{id}`"))
        .with_details(serde_json::json!({ "order_id": id }))
        .with_next_tool("list_orders")
}
