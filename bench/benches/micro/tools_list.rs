//! MCP round trips in process, over a `tokio::io::duplex` pipe, with a raw JSON-RPC client
//! (write a line, read a line) so the client costs next to nothing: `tools/list` of a
//! 1,000-tool catalog, and one `tools/call search_products`, through `carmy-mcp` and through
//! the hand-written rmcp handler. No process, no stdio: the MCP layer alone.

use carmy_bench::rmcp_handler::RmcpShop;
use carmy_mcp::McpServer;
use divan::Bencher;
use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

use crate::{many_tools, tools};

const PIPE_BYTES: usize = 1 << 20;

/// The client end of an MCP session, past the handshake.
struct Client {
    write: WriteHalf<DuplexStream>,
    read: BufReader<ReadHalf<DuplexStream>>,
    line: Vec<u8>,
    next_id: u64,
}

impl Client {
    async fn connect(stream: DuplexStream) -> Self {
        let (read, write) = tokio::io::split(stream);
        let mut client = Self {
            write,
            read: BufReader::with_capacity(PIPE_BYTES, read),
            line: Vec::with_capacity(PIPE_BYTES),
            next_id: 0,
        };
        client
            .request(
                r#""initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}"#,
            )
            .await;
        client
            .write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .unwrap();
        client
    }

    /// Sends `{"jsonrpc":"2.0","id":N,"method":<rest>}` and returns the answer's length.
    async fn request(&mut self, rest: &str) -> usize {
        self.next_id += 1;
        let message = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":{rest}}}\n",
            self.next_id
        );
        self.write.write_all(message.as_bytes()).await.unwrap();
        self.write.flush().await.unwrap();
        self.line.clear();
        self.read.read_until(b'\n', &mut self.line).await.unwrap();
        // Answers start `{"jsonrpc":"2.0","id":N,"result":` (both servers write with serde).
        let head = &self.line[..self.line.len().min(48)];
        assert!(
            head.windows(9).any(|w| w == b"\"result\":"),
            "not a result: {}",
            String::from_utf8_lossy(head)
        );
        self.line.len()
    }
}

const LIST: &str = r#""tools/list","params":{}"#;
const CALL: &str =
    r#""tools/call","params":{"name":"search_products","arguments":{"query":"mouse"}}"#;

fn carmy_session(host: &tokio::runtime::Runtime, runtime: carmy_core::Runtime) -> Client {
    let (client, server) = tokio::io::duplex(PIPE_BYTES);
    let (read, write) = tokio::io::split(server);
    host.spawn(McpServer::new(runtime).serve_io(read, write));
    host.block_on(Client::connect(client))
}

fn rmcp_session(host: &tokio::runtime::Runtime, handler: RmcpShop) -> Client {
    let (client, server) = tokio::io::duplex(PIPE_BYTES);
    host.spawn(async move { handler.serve(server).await.unwrap().waiting().await });
    host.block_on(Client::connect(client))
}

/// `tools/list` of 1,000 tools through carmy-mcp (the listing is built once, at start).
#[divan::bench(sample_count = 30)]
fn tools_list_1000_carmy(bencher: Bencher<'_, '_>) {
    let host = tools::tokio();
    let mut client = carmy_session(&host, many_tools::runtime());
    let bytes = host.block_on(client.request(LIST));
    eprintln!("tools/list of 1,000 tools through carmy-mcp: {bytes} bytes");
    bencher.bench_local(|| host.block_on(client.request(LIST)));
}

/// `tools/list` of 1,000 tools (1,001 with `search_products`) through the rmcp handler.
#[divan::bench(sample_count = 30)]
fn tools_list_1000_rmcp(bencher: Bencher<'_, '_>) {
    let host = tools::tokio();
    let mut client = rmcp_session(&host, RmcpShop::with_extra_tools(1000));
    let bytes = host.block_on(client.request(LIST));
    eprintln!("tools/list of 1,001 tools through the rmcp handler: {bytes} bytes");
    bencher.bench_local(|| host.block_on(client.request(LIST)));
}

/// One `tools/call search_products {"query":"mouse"}` through carmy-mcp and the runtime.
#[divan::bench]
fn tools_call_carmy(bencher: Bencher<'_, '_>) {
    let host = tools::tokio();
    let mut client = carmy_session(&host, tools::runtime());
    bencher.bench_local(|| host.block_on(client.request(CALL)));
}

/// The same call through the hand-written rmcp handler.
#[divan::bench]
fn tools_call_rmcp(bencher: Bencher<'_, '_>) {
    let host = tools::tokio();
    let mut client = rmcp_session(&host, RmcpShop::new());
    bencher.bench_local(|| host.block_on(client.request(CALL)));
}
