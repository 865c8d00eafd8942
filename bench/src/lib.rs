//! # carmy-bench
//!
//! Carmy's benchmarks. The library holds what the contenders share:
//!
//! - [`catalog`]: the in-memory product catalog (the shop's `examples/shop/data/catalog.json`)
//!   and the one `search_products` implementation every Rust contender serves, so that the load driver
//!   measures the MCP layer and not the search;
//! - [`rmcp_handler`]: the hand-written rmcp `ServerHandler` of the `bench-rmcp-handler`
//!   contender, also driven in-process by the microbenchmarks.
//!
//! The binaries are the load driver (`mcp-load`), the rmcp contenders (`bench-rmcp-handler`,
//! `bench-rmcp-macros`) and `shop-tuned`, the example shop linked with its hot code first
//! (`build.rs`); `bench/README.md` says how to run them.

pub mod catalog;
pub mod rmcp_handler;
