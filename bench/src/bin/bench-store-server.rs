//! The server of the store benchmark (`bench/stores.sh`): writes, served by Carmy's own command
//! line, so `--store` puts them on memory, a SQLite file, PostgreSQL or Redis.
//!
//! - `note` is transactional: it writes one record (under its execution id, so no two calls
//!   touch the same row) in the store step that records its outcome;
//! - `touch` is a plain write with no effect of its own: with a request id it costs a claim and
//!   a finish, the price of exactly-once alone;
//! - `note_serial` is `note` without `parallel_safe`: the runtime runs it one call at a time,
//!   so it measures one commit's latency in the store, not what the store does with many calls
//!   at once.
//!
//! With `--store memory` the runtime keeps this binary's in-memory store, which holds a million
//! request ids (1 GiB; ~360 bytes each here), 100,000 of them per principal (64 MiB), where the
//! default holds 100,000 (128 MiB), 10,000 per principal (16 MiB): a case of `stores.sh` sends
//! ~120,000 (5 s at ~20k calls/s and its warm-up, over 32 principals), and past a bound further
//! claims are refused as `CAPACITY`, so the run would measure refusals. The other `--store`
//! choices replace it.

use carmy::{
    AgentError, Carmy, Context,
    store::{MemoryStore, MemoryStoreLimits},
    tool,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Note {
    /// What to write.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Noted {
    /// The record's key.
    key: String,
}

/// Writes `text` as a record, committed with the outcome.
#[tool(effect = "write", transactional, parallel_safe = true)]
async fn note(input: Note, ctx: &Context) -> Result<Noted, AgentError> {
    write_note(input, ctx)
}

/// Does nothing: a write whose only cost is the runtime's.
#[tool(effect = "write", parallel_safe = true)]
async fn touch(input: Note) -> Result<Noted, AgentError> {
    Ok(Noted { key: input.text })
}

/// `note`, run one call at a time.
#[tool(effect = "write", transactional)]
async fn note_serial(input: Note, ctx: &Context) -> Result<Noted, AgentError> {
    write_note(input, ctx)
}

fn write_note(input: Note, ctx: &Context) -> Result<Noted, AgentError> {
    let key = ctx
        .execution_id()
        .map(ToString::to_string)
        .unwrap_or_default();
    ctx.records().put("notes", &key, &input.text)?;
    Ok(Noted { key })
}

fn main() -> std::process::ExitCode {
    let limits = MemoryStoreLimits::default().with_request_ids(|ids| {
        ids.with_max(1_000_000)
            .with_max_bytes(1 << 30)
            .with_max_per_principal(100_000)
            .with_max_bytes_per_principal(64 << 20)
    });
    let carmy = Carmy::new()
        .store(MemoryStore::new(limits))
        .tool(note)
        .tool(touch)
        .tool(note_serial);
    carmy::cli::Cli::build(carmy)
        .name("bench-store-server")
        .version(env!("CARGO_PKG_VERSION"))
        .about("The store benchmark's server: transactional and plain writes")
        .main()
}
