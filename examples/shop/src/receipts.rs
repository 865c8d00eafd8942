//! `send_receipt`: the one tool that reaches outside the store.

use carmy::{AgentError, Context, State, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Store, books, orders::order_not_found};

/// Arguments of `send_receipt`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReceiptInput {
    /// The order to send a receipt for.
    pub order_id: String,
    /// Where to send it.
    #[schemars(email)]
    pub email: String,
}

/// A receipt as sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Receipt {
    /// The message id the mail system gave it.
    pub message_id: String,
    /// The order.
    pub order_id: String,
    /// The recipient.
    pub sent_to: String,
}

/// Email the receipt of one of your orders. Reaches outside the store: an email cannot be
/// unsent.
#[tool(effect = "external_write", title = "Send a receipt")]
pub async fn send_receipt(
    input: ReceiptInput,
    store: State<Store>,
    ctx: &Context,
) -> Result<Receipt, AgentError> {
    if books::order(ctx.records(), books::owner(ctx), &input.order_id)
        .await?
        .is_none()
    {
        return Err(order_not_found(&input.order_id));
    }
    // The outbox stands in for a mail API.
    let mut outbox = store.outbox();
    let receipt = Receipt {
        message_id: format!("msg-{}", outbox.len() + 1),
        order_id: input.order_id,
        sent_to: input.email,
    };
    outbox.push(receipt.clone());
    tracing::info!(message_id = %receipt.message_id, order_id = %receipt.order_id, "receipt sent");
    Ok(receipt)
}
