//! The crate's integration tests, one binary: each module was a test file of its own
//! (one link instead of one per file; `cargo test --test integration MODULE::` runs one).

mod common;
mod hostile;
mod http_headers;
mod sdk_servers;
mod shop;
mod shop_replicas;
mod terminal;
