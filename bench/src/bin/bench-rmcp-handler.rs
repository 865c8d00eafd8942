//! Contender `bench-rmcp-handler`: a hand-written rmcp `ServerHandler` serving
//! `search_products` ([`carmy_bench::rmcp_handler`]): the floor of what rmcp costs.
//!
//! Served over `rmcp::transport::stdio()`; `--pipes` serves over `stdio_pipes()` instead
//! (non-blocking pipe descriptors, no blocking-pool hand-off), to measure that difference.

use carmy_bench::rmcp_handler::RmcpShop;
use rmcp::ServiceExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = if std::env::args().any(|a| a == "--pipes") {
        RmcpShop::new()
            .serve(rmcp::transport::stdio_pipes())
            .await?
    } else {
        RmcpShop::new().serve(rmcp::transport::stdio()).await?
    };
    service.waiting().await?;
    Ok(())
}
