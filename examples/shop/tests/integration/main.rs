//! The crate's integration tests, one binary: each module was a test file of its own
//! (one link instead of one per file; `cargo test --test integration MODULE::` runs one).

mod attacks;
mod attacks_confirm;
mod attacks_http;
mod attacks_stdio;
mod cli;
mod closed_stdout;
mod common;
mod config;
mod confirm_http;
mod files;
mod prompts;
mod reload;
mod replicas;
mod replicas_rate_limits;
mod replicas_round_trips;
mod resources;
mod schemas;
mod store;
mod tools;
