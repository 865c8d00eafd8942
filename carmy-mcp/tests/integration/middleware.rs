//! Middleware over MCP: what a middleware refuses is the tool error a client gets, on both
//! lifecycles, and the session goes on; what it lets through runs as before.

use crate::common::{self, LIFECYCLES, PATIENCE};

use carmy_core::{AgentError, Answer, Incoming, Middleware, Next};
use carmy_mcp::McpServer;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use tokio::{sync::mpsc, time::timeout};

/// Refuses `shout` to everyone.
struct NoShouting;

impl Middleware for NoShouting {
    async fn handle(&self, request: Incoming, next: Next<'_>) -> Answer {
        if request.target() == "shout" {
            return request.refuse(AgentError::permission("NO_SHOUTING", "inside voices"));
        }
        next.run(request).await
    }
}

#[tokio::test]
async fn a_refusal_is_the_tool_error_the_client_gets() {
    let (probe, _) = mpsc::unbounded_channel();
    let runtime = common::tools::testbed_with(probe, |carmy| carmy.middleware(NoShouting)).runtime;
    for lifecycle in LIFECYCLES {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(server_io);
        tokio::spawn(McpServer::new(runtime.clone()).serve_io(read, write));
        let (client, _) = common::connect(lifecycle, client_io).await;
        let arguments = |value: serde_json::Value| value.as_object().cloned().unwrap_or_default();
        let shout =
            CallToolRequestParams::new("shout").with_arguments(arguments(json!({ "text": "hi" })));
        let refused = timeout(PATIENCE, client.call_tool(shout))
            .await
            .expect("in time")
            .expect("a result");
        assert_eq!(refused.is_error, Some(true), "{lifecycle:?}");
        assert_eq!(common::meta(&refused, "carmy/error")["code"], "NO_SHOUTING");
        assert_eq!(common::meta(&refused, "carmy/status"), "rejected");

        let count = CallToolRequestParams::new("word_count")
            .with_arguments(arguments(json!({ "text": "one two" })));
        let counted = client.call_tool(count).await.expect("a result");
        assert_ne!(counted.is_error, Some(true), "{lifecycle:?}: {counted:?}");
        client.cancel().await.expect("close");
    }
}
