//! Prompts: messages a client offers its user as a command (`/order_help ord-1001`), with the
//! ids they name completed from the shop's own books as the user types.
//!
//! | prompt | arguments | what |
//! |---|---|---|
//! | `order_help` | `order_id` (completed), `issue` | the order embedded as a resource, and the customer's issue to answer |

use carmy::{AgentError, Content, Context, Message, Messages, Role, prompt};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{books, completion::order_ids, orders::order_not_found};

/// Arguments of `order_help`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OrderHelpInput {
    /// The order the customer writes about, e.g. `ord-1001`.
    pub order_id: String,
    /// What the customer says is wrong, in their words.
    pub issue: Option<String>,
}

/// Help a customer with one of their orders: the order as it stands, and what to answer.
#[prompt(title = "Help with an order", complete(order_id = order_ids))]
pub async fn order_help(input: OrderHelpInput, ctx: &Context) -> Result<Messages, AgentError> {
    let order = books::order(ctx.records(), books::owner(ctx), &input.order_id).await?;
    let order = order.ok_or_else(|| order_not_found(&input.order_id))?;
    let issue = input
        .issue
        .unwrap_or_else(|| "They did not say what is wrong.".to_owned());
    let uri = format!("shop://orders/{}", order.order_id);
    Ok(Messages::new()
        .description(format!("Help with order {}", order.order_id))
        .with(Message::resource(
            Role::User,
            Content::json(&order)?.uri(uri),
        ))
        .with(Message::user(format!(
            "A customer writes about order {} (above). {issue}\n\
             Answer them in a few sentences: what the order says, and what you can do with \
             the shop's tools (cancel_order while it is placed, send_receipt, quote_delivery).",
            order.order_id
        ))))
}
