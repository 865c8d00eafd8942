//! Confirmation through the client over HTTP: `shop http --confirm-via-client` (or
//! `security.confirm_via_client = true`) asks the client's user, as `shop mcp` does, instead of
//! reading the setting and answering every such call `CONFIRMATION_REQUIRED`.

use crate::common;

use common::HttpShop;
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789abcdef";

/// A stateless 2026-07-28 `tools/call` of `cancel_order` from a client that can put a form to
/// its user: the status and the answer.
fn cancel(shop: &HttpShop) -> (u16, Value) {
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "cancel_order"),
    ];
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "cancel_order",
            "arguments": { "order_id": "ord-1001" },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
                "io.modelcontextprotocol/clientInfo": { "name": "confirm-test", "version": "1" }
            }
        }
    });
    shop.client(ALICE).post_with(&headers, &call)
}

#[test]
fn with_the_setting_a_call_needing_confirmation_asks_the_client_over_http() {
    let shop = HttpShop::serve(
        &[(ALICE, "alice")],
        &["--stateless", "--confirm-via-client"],
        None,
    );
    let (status, answer) = cancel(&shop);
    assert_eq!(status, 200, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let asked = &result["inputRequests"]["carmy/confirm"];
    assert_eq!(asked["method"], "elicitation/create", "{answer}");
    assert!(
        asked["params"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("cancel_order")),
        "{answer}"
    );
    assert!(result["requestState"].is_string(), "{answer}");
}

#[test]
fn without_it_the_call_is_refused_for_want_of_confirmation() {
    let shop = HttpShop::serve(&[(ALICE, "alice")], &["--stateless"], None);
    let (status, answer) = cancel(&shop);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["carmy/error"]["code"], "CONFIRMATION_REQUIRED",
        "{answer}"
    );
}
