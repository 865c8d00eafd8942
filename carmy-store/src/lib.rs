//! Durable [`IdempotencyStore`](carmy_core::IdempotencyStore)s for Carmy: claims and outcomes
//! that outlive the process, so a retried payment is replayed, not run again, after a restart.
//!
//! - [`SqliteStore`]: one local file, shared by every process that opens it. The default of
//!   the serving subcommands of a binary built with `carmy::cli::Cli::with_files` and carmy's
//!   `store` feature (the shop is one), `--store memory` aside. A
//!   [`TaskStore`](carmy_core::TaskStore) as well: tasks in the same file.
//! - `RedisStore` (feature `redis`): a Redis server, shared by every replica of a service that
//!   connects to it; leases on the server's clock, atomic scripts, bounds as the others', failing
//!   closed while Redis is away; records committed with their outcome in one script; tasks
//!   that any replica reads, answers and cancels. Plain TCP, Redis 7.0 or later, not Redis
//!   Cluster.
//! - `PostgresStore` (feature `postgres`): a PostgreSQL database, shared by every replica of a
//!   server: one claim per key across them all, by the database server's clock, the
//!   application's records, committed with the outcomes of transactional tools, and tasks
//!   (a [`TaskStore`](carmy_core::TaskStore)) that any replica reads, answers and cancels.
//! - `conformance` (feature `conformance`): the trait's contract as scenarios, which every
//!   store, `MemoryStore` included, passes with one line (`conformance_tests!`).
//! - `task_conformance` (feature `conformance`): the same for
//!   [`TaskStore`](carmy_core::TaskStore)s (`task_conformance_tests!`), replicas sharing a
//!   store included; `MemoryTaskStore`, [`SqliteStore`], `PostgresStore` and `RedisStore` pass it.
//! - `redemption_conformance` (feature `conformance`): the same for
//!   [`RedemptionStore`](carmy_core::RedemptionStore)s (`redemption_conformance_tests!`): a
//!   single-use token redeemed once, across replicas too. Every store here is one, so replicas
//!   sharing it redeem a token once whichever of them sees it.
//!
//! `PostgresStore` and `RedisStore` are [`RateLimitStore`](carmy_core::RateLimitStore)s as
//! well: replicas sharing one share each tool's rate limit. [`SqliteStore`] is not: with it,
//! each process keeps its own buckets.
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
//!
//! ## Why PostgreSQL
//!
//! Replicas of a server on several hosts cannot share a file: they need a store they all reach,
//! that makes a claim atomic across them, and whose clock they agree on. PostgreSQL is the
//! database most teams already run for that: row locks and `INSERT ... ON CONFLICT` make a
//! claim one short transaction, the server's `statement_timestamp()` is the one clock, and
//! `LISTEN`/`NOTIFY` wakes a retry that waits on another replica. `tokio-postgres` is its
//! asynchronous client in pure Rust (no libpq to link), and `deadpool-postgres` pools its
//! connections with bounded waits.

#[cfg(any(feature = "postgres", feature = "redis"))]
mod change_feed;
mod claim_wait;
mod ordered;
mod outcome;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
mod sqlite;
mod sync;
mod task_record;

#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "conformance")]
pub mod record_conformance;
#[cfg(feature = "conformance")]
pub mod redemption_conformance;
#[cfg(feature = "conformance")]
mod scenario;
#[cfg(feature = "conformance")]
pub mod task_conformance;
#[cfg(feature = "conformance")]
pub mod unclaimed_conformance;

#[cfg(feature = "postgres")]
pub use postgres::{PostgresStore, PostgresStoreOptions};
#[cfg(feature = "redis")]
pub use redis::{Durability, RedisStore, RedisStoreOptions};
pub use sqlite::{SqliteStore, SqliteStoreOptions};
