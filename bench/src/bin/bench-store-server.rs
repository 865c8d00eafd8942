//! The server of the store benchmark (`bench/stores.sh`): two writes, served by Carmy's own
//! command line, so `--store` puts them on memory, a SQLite file, PostgreSQL or Redis.
//!
//! - `note` is transactional: it writes one record (under its execution id, so no two calls
//!   touch the same row) in the store step that records its outcome;
//! - `touch` is a plain write with no effect of its own: with a request id it costs a claim and
//!   a finish, the price of exactly-once alone.

use carmy::{AgentError, Carmy, Context, tool};
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
#[tool(effect = "write", transactional)]
async fn note(input: Note, ctx: &Context) -> Result<Noted, AgentError> {
    let key = ctx
        .execution_id()
        .map(ToString::to_string)
        .unwrap_or_default();
    ctx.records().put("notes", &key, &input.text)?;
    Ok(Noted { key })
}

/// Does nothing: a write whose only cost is the runtime's.
#[tool(effect = "write")]
async fn touch(input: Note) -> Result<Noted, AgentError> {
    Ok(Noted { key: input.text })
}

fn main() -> std::process::ExitCode {
    carmy::cli::Cli::build(Carmy::new().tool(note).tool(touch))
        .name("bench-store-server")
        .version(env!("CARGO_PKG_VERSION"))
        .about("The store benchmark's server: a transactional write and a plain one")
        .main()
}
