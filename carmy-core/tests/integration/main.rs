//! The crate's integration tests, one binary: each module was a test file of its own
//! (one link instead of one per file; `cargo test --test integration MODULE::` runs one).

mod access;
mod admission;
mod adversarial;
mod approval;
mod asking;
mod common;
mod completion;
mod content;
#[cfg(feature = "fs")]
mod directory;
mod disabled;
mod middleware;
mod pipeline;
mod prompts;
mod providers;
mod rate_limit;
mod rate_limit_store;
mod redemptions;
mod resource_changes;
mod resources;
mod result_size;
mod store;
mod tasks;
