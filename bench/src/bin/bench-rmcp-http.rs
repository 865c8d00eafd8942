//! Contender `bench-rmcp-http`: the hand-written rmcp `ServerHandler`
//! ([`carmy_bench::rmcp_handler`]) behind rmcp's own `StreamableHttpService`, mounted on axum at
//! `/mcp`, as rmcp's documentation serves it: the floor of what streamable HTTP costs with rmcp.
//!
//! ```text
//! bench-rmcp-http [--addr 127.0.0.1:0] [--stateless]
//! ```
//!
//! With `--stateless` every request stands alone and is answered with JSON; without it, the
//! client opens a session with `initialize` and each answer comes on an event stream, as the
//! shop's `http` (with and without `--stateless`) does. Prints `listening on http://ADDR/mcp`
//! once it accepts connections.
//!
//! Connections have Nagle's algorithm off, as Carmy's server and Node's have: axum's `serve`
//! leaves it on, and then every answer on an event stream waits for the client's delayed
//! acknowledgement (about 40 ms here), which would measure the kernel, not rmcp.

use std::sync::Arc;

use axum::serve::ListenerExt;
use carmy_bench::rmcp_handler::RmcpShop;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:0".to_owned();
    let mut stateless = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().ok_or("--addr needs IP:PORT")?,
            "--stateless" => stateless = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!stateless)
        .with_json_response(stateless);
    let shop = RmcpShop::new();
    let service = StreamableHttpService::new(
        move || Ok(shop.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    axum::serve(listener, router).await?;
    Ok(())
}
