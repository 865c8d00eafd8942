//! `carmy`: talk to any MCP server from the terminal.
//!
//! ```text
//! carmy client [-t stdio|http|unix] -s <server> <command> [options]
//! ```
//!
//! The command line is in `args.rs`, reaching the server in `connect.rs`, what the server sends
//! unasked in `handler.rs`, each request in `commands/`, and how a run ends in `exit.rs`. No
//! text of the server's reaches the terminal unescaped (`escape.rs`).

mod args;
mod commands;
mod connect;
mod elicit;
mod escape;
mod exit;
mod handler;
mod interrupt;
mod out;
mod progress;
mod render;
mod sse;
mod timeout;

use std::{process::ExitCode, sync::Arc};

use clap::Parser;

use crate::{
    args::{Cli, Top},
    commands::Run,
    exit::Failure,
    handler::Handler,
    progress::Stderr,
    timeout::Timeout,
};

fn main() -> ExitCode {
    // Help and version go to stdout (0), usage errors to stderr (2): clap's statuses.
    let cli = Cli::parse();
    let Top::Client(client) = cli.command;
    // One request at a time: a current-thread runtime is all a client needs.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(client_main(client)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {}", escape::text(&failure.to_string()));
            failure.status()
        }
    }
}

async fn client_main(client: args::Client) -> exit::Outcome {
    let interrupt = interrupt::Interrupt::listen();
    let stderr = Arc::new(Stderr::new());
    let timeout = Arc::new(Timeout::new(client.timeout));
    let (updates, updates_rx) = tokio::sync::mpsc::unbounded_channel();
    let legacy_version = rmcp::model::ProtocolVersion::V_2025_11_25;
    let handler = Handler::new(stderr.clone(), timeout.clone(), updates, legacy_version);
    let session = tokio::select! {
        session = connect::connect(&client, handler) => session?,
        _ = interrupt.wait() => return Err(Failure::Interrupted),
    };
    let mut run = Run {
        session,
        json: client.json,
        timeout,
        max_pages: client.max_pages,
        stderr,
        updates: updates_rx,
        interrupt,
    };
    let outcome = commands::run(&mut run, &client.command).await;
    // Closing lets a stdio server see the end of its input and exit before carmy does; a
    // server that does not is not waited for long.
    let closing = run.session.cancel();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), closing).await;
    outcome
}
