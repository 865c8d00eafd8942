//! Resources: what a client reads by URI rather than calls. The catalog as a whole, one product
//! and one order, as JSON.
//!
//! | URI | what |
//! |---|---|
//! | `shop://catalog` | every product, in catalog order |
//! | `shop://products/{id}` | one product with its stock now (what `get_product` returns) |
//! | `shop://orders/{order_id}` | one of the caller's orders (what `get_order` returns) |

use carmy::{AgentError, Content, Context, State, resource};

use crate::{
    Store, books,
    catalog::{GetProductInput, product_details},
    completion::{order_ids, product_ids},
    orders::{OrderRef, order_not_found},
};

/// Every product the shop sells, in catalog order, as a JSON array.
#[resource(
    uri = "shop://catalog",
    title = "Catalog",
    mime_type = "application/json"
)]
pub async fn catalog(store: State<Store>) -> Result<Content, AgentError> {
    Content::json(&store.products())
}

/// One product with the units in stock now.
#[resource(
    uri = "shop://products/{id}",
    title = "Product",
    complete(id = product_ids),
    mime_type = "application/json"
)]
pub async fn product(
    input: GetProductInput,
    store: State<Store>,
    ctx: &Context,
) -> Result<Content, AgentError> {
    Content::json(&product_details(&store, ctx.records(), &input.id).await?)
}

/// One of your orders: its lines, address, total and status.
#[resource(
    uri = "shop://orders/{order_id}",
    title = "Order",
    complete(order_id = order_ids),
    mime_type = "application/json"
)]
pub async fn order(input: OrderRef, ctx: &Context) -> Result<Content, AgentError> {
    let found = books::order(ctx.records(), books::owner(ctx), &input.order_id).await?;
    Content::json(&found.ok_or_else(|| order_not_found(&input.order_id))?)
}
