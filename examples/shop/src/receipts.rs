//! `send_receipt`: the one tool that reaches outside the store.

use carmy::{AgentError, State, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Store, orders::order_not_found};

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

/// Email the receipt of an order. Reaches outside the store: an email cannot be unsent.
#[tool(effect = "external_write", title = "Send a receipt")]
pub async fn send_receipt(input: ReceiptInput, store: State<Store>) -> Result<Receipt, AgentError> {
    let mut books = store.books();
    if !books.orders.contains_key(&input.order_id) {
        return Err(order_not_found(&input.order_id));
    }
    let receipt = Receipt {
        message_id: format!("msg-{}", books.outbox.len() + 1),
        order_id: input.order_id,
        sent_to: input.email,
    };
    // The outbox stands in for a mail API.
    books.outbox.push(receipt.clone());
    tracing::info!(message_id = %receipt.message_id, order_id = %receipt.order_id, "receipt sent");
    Ok(receipt)
}
