//! The crate's integration tests, one binary: each module was a test file of its own
//! (one link instead of one per file; `cargo test --test integration MODULE::` runs one).

mod bounds;
mod change_feed;
mod conformance;
mod postgres;
mod rate_limits;
mod redemption_conformance;
mod redis;
mod restart;
mod scratch;
mod sqlite;
mod task_conformance;
