//! Durable [`IdempotencyStore`](carmy_core::IdempotencyStore)s for Carmy: claims and outcomes
//! that outlive the process, so a retried payment is replayed, not run again, after a restart.
//!
//! - [`SqliteStore`]: one local file, shared by every process that opens it. The default of
//!   the serving subcommands of a binary built with `carmy::cli::Cli::with_files` and carmy's
//!   `store` feature (the shop is one), `--store memory` aside.
//! - `conformance` (feature `conformance`): the trait's contract as scenarios, which every
//!   store, `MemoryStore` included, passes with one line (`conformance_tests!`).
//! - `task_conformance` (feature `conformance`): the same for
//!   [`TaskStore`](carmy_core::TaskStore)s (`task_conformance_tests!`), replicas sharing a
//!   store included; `MemoryTaskStore` passes it, and durable task stores join there.
//!
//! ## Why SQLite
//!
//! The embedded store must survive `kill -9` at any instant, and several processes (a server
//! and its `call` command, two replicas on one host) must be able to share its file. SQLite
//! (through `rusqlite`, built from its bundled source so no system library is needed) does
//! both: its write-ahead log makes each transaction atomic and durable, and its file locks let
//! any number of processes read and take turns writing. `redb`, the other well-kept embedded
//! database in Rust, locks its file to one process at a time, which rules out the second.
//! SQLite's file can also be opened with the `sqlite3` shell when someone needs to look.

mod outcome;
mod sqlite;

#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "conformance")]
pub mod task_conformance;

pub use sqlite::{SqliteStore, SqliteStoreOptions};
