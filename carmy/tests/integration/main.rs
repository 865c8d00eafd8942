//! The crate's integration tests, one binary: each module was a test file of its own
//! (one link instead of one per file; `cargo test --test integration MODULE::` runs one).

mod macro_expansion;
mod prompt_macro;
mod resource_macro;
mod transactions;
mod ui;
mod unclaimed;
