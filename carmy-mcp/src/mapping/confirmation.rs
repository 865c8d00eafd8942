//! The confirmation form: how a question from an approver is put to the human through the
//! client (MCP form elicitation), and which answers approve.

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
};
use serde_json::{Value, json};

/// The key of the confirmation in `inputRequests` / `inputResponses`.
pub const CONFIRM_INPUT_KEY: &str = "carmy/confirm";
/// The boolean field of the confirmation form; only `true` approves.
pub const CONFIRM_FIELD: &str = "approve";

/// The elicitation asking the human `message` about one call of `tool`: a form of one
/// boolean, [`CONFIRM_FIELD`], `false` by default. The message is taken as is: the question
/// is the approver's, short and bounded.
pub(crate) fn confirmation_request(tool: &str, message: impl Into<String>) -> ElicitRequest {
    let schema: ElicitationSchema = serde_json::from_value(json!({
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
    }))
    .expect("a boolean property is a valid elicitation schema");
    ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.into(),
        requested_schema: schema,
    })
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
