//! Contender `bench-rmcp-macros`: rmcp's own `#[tool_router]`/`#[tool]` macros, with
//! `Parameters<T>` for the input and `Json<T>` for structured output. Schemas come from
//! schemars as rmcp generates them; no validation of the arguments beyond serde.
//!
//! Served over `rmcp::transport::stdio()`; `--pipes` serves over `stdio_pipes()` instead.

use carmy_bench::catalog::{self, SearchInput, SearchOutput};
use rmcp::{
    Json, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{Implementation, ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
};

#[derive(Debug, Clone)]
struct Shop {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Shop {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Search the product catalog by name or tag.
    #[tool]
    async fn search_products(
        &self,
        Parameters(input): Parameters<SearchInput>,
    ) -> Json<SearchOutput> {
        Json(catalog::search(&input))
    }
}

// The router is built once and stored: a bare `#[tool_handler]` would call
// `Self::tool_router()`, rebuilding it, on every request.
#[tool_handler(router = self.tool_router)]
impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bench-rmcp-macros", "0.1.0"))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = if std::env::args().any(|a| a == "--pipes") {
        Shop::new().serve(rmcp::transport::stdio_pipes()).await?
    } else {
        Shop::new().serve(rmcp::transport::stdio()).await?
    };
    service.waiting().await?;
    Ok(())
}
