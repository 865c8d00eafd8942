//! `tools/list` on Carmy's line transport, which writes the tools from a page serialized once,
//! answers exactly what the full result gives through rmcp's own transport, in both lifecycles.

use crate::common;

use carmy_mcp::McpServer;
use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// A raw client: one JSON line out, one JSON line back.
struct Raw {
    write: tokio::io::WriteHalf<DuplexStream>,
    read: BufReader<tokio::io::ReadHalf<DuplexStream>>,
}

impl Raw {
    fn new(stream: DuplexStream) -> Self {
        let (read, write) = tokio::io::split(stream);
        Self {
            write,
            read: BufReader::new(read),
        }
    }

    async fn send(&mut self, message: &Value) {
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    async fn receive(&mut self) -> Value {
        let mut line = String::new();
        tokio::time::timeout(common::PATIENCE, self.read.read_line(&mut line))
            .await
            .expect("an answer in time")
            .unwrap();
        serde_json::from_str(&line).expect("a JSON line")
    }
}

/// The same session's answers from Carmy's transport and from rmcp's.
async fn both(messages: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let (probe, _) = tokio::sync::mpsc::unbounded_channel();
    let runtime = common::tools::testbed(probe).runtime;

    let (client, server) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server);
    tokio::spawn(McpServer::new(runtime.clone()).serve_io(read, write));
    let mut carmy = Raw::new(client);

    let (client, server) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = McpServer::new(runtime).serve(server).await?;
        running.waiting().await.map_err(|error| error.to_string())?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    let mut rmcp = Raw::new(client);

    let (mut from_carmy, mut from_rmcp) = (Vec::new(), Vec::new());
    for message in messages {
        carmy.send(message).await;
        rmcp.send(message).await;
        if message.get("id").is_some() {
            from_carmy.push(carmy.receive().await);
            from_rmcp.push(rmcp.receive().await);
        }
    }
    (from_carmy, from_rmcp)
}

#[tokio::test]
async fn the_page_answers_as_the_full_result_does_after_initialize() {
    let (carmy, rmcp) = both(&[
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "listing", "version": "0" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
        json!({ "jsonrpc": "2.0", "id": "again", "method": "tools/list", "params": {} }),
    ])
    .await;
    assert_eq!(carmy, rmcp);
    let tools = carmy[1]["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 7, "{:#}", carmy[1]);
    assert!(tools.iter().all(|tool| tool["inputSchema"].is_object()));
    assert_eq!(carmy[2]["id"], "again");
    assert_eq!(carmy[2]["result"], carmy[1]["result"]);
}

#[tokio::test]
async fn the_page_answers_as_the_full_result_does_on_2026_07_28() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "listing", "version": "0" }
    });
    let (carmy, rmcp) = both(&[
        json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": meta } }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": { "_meta": meta } }),
        // Refused by rmcp before the handler runs: no page involved, the same error.
        json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": { "_meta": {} } }),
    ])
    .await;
    assert_eq!(carmy, rmcp);
    assert_eq!(carmy[1]["result"]["resultType"], "complete", "{}", carmy[1]);
    assert_eq!(carmy[1]["result"]["ttlMs"], 60_000);
    assert_eq!(
        carmy[1]["result"]["tools"].as_array().map(Vec::len),
        Some(7)
    );
    assert!(carmy[2]["error"].is_object(), "{}", carmy[2]);
}
