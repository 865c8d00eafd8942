//! The confirmation form: the question the client's approver puts to the human (a form of one
//! boolean, asked like any tool's question), and which answers approve.

use carmy_core::Ask;
use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::{Value, json};

/// The key of the confirmation in `inputRequests` / `inputResponses`.
pub const CONFIRM_INPUT_KEY: &str = "carmy/confirm";
/// The boolean field of the confirmation form; only `true` approves.
pub const CONFIRM_FIELD: &str = "approve";

/// The form asking the human `message` about one call of `tool`: one boolean,
/// [`CONFIRM_FIELD`], `false` by default. The message is taken as is: the question is the
/// approver's, short and bounded.
pub(crate) fn confirmation(tool: &str, message: impl Into<String>) -> Ask {
    let form = json!({
        "type": "object",
        "properties": {
            CONFIRM_FIELD: {
                "type": "boolean",
                "title": "Approve",
                "description": format!("Run this call of `{tool}` once"),
                "default": false,
            }
        },
        "required": [CONFIRM_FIELD],
    });
    Ask::input(message, form)
}

/// Only an accepted form with `approve: true` approves; decline, cancel, `false` or a missing
/// field do not.
pub(crate) fn approves(answer: &ElicitResult) -> bool {
    answer.action == ElicitationAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|content| content.get(CONFIRM_FIELD))
            .and_then(Value::as_bool)
            == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_is_one_clients_accept() {
        let ask = confirmation("cancel_order", "Allow `cancel_order`?");
        let request = crate::mapping::server_request(&ask).expect("a valid elicitation");
        let request = serde_json::to_value(request).expect("JSON");
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["message"], "Allow `cancel_order`?");
        let field = &request["params"]["requestedSchema"]["properties"][CONFIRM_FIELD];
        assert_eq!(field["type"], "boolean");
        assert_eq!(field["default"], false);
    }

    #[test]
    fn only_an_explicit_approval_approves() {
        let accept = |content: Option<Value>| {
            let mut result = ElicitResult::new(ElicitationAction::Accept);
            result.content = content;
            result
        };
        assert!(approves(&accept(Some(json!({ "approve": true })))));
        assert!(!approves(&accept(Some(json!({ "approve": false })))));
        assert!(!approves(&accept(Some(json!({ "approve": "yes" })))));
        assert!(!approves(&accept(None)));
        assert!(!approves(&ElicitResult::new(ElicitationAction::Decline)));
        assert!(!approves(&ElicitResult::new(ElicitationAction::Cancel)));
    }
}
