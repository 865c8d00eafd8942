//! The crate's integration tests, one binary: each module was a test file of its own
//! (one link instead of one per file; `cargo test --test integration MODULE::` runs one).

mod call_thread;
mod common;
mod completion;
mod confirm;
mod confirm_bounds;
mod execution;
mod faults_over_stdio;
mod files;
mod hostile;
#[cfg(feature = "http")]
mod http;
mod ids_and_cancels;
mod list_changes;
mod listing;
mod logging;
mod mapping;
mod middleware;
#[cfg(feature = "oauth")]
mod oauth;
mod prompts;
mod resources;
#[cfg(feature = "http")]
mod sse;
mod tasks;
mod transports;
mod unix;
