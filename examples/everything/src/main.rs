//! `everything --addr 127.0.0.1:PORT`: every conformance fixture over streamable HTTP on `/mcp`
//! (`everything --help` lists the other transports: `mcp` for stdio, `unix`).

use std::process::ExitCode;

fn main() -> ExitCode {
    // Built once the command line is read, so that `--store` chooses where its executions,
    // records and tasks are kept (`--store memory` for the conformance suite's runs).
    let cli = carmy::cli::Cli::build(everything::everything())
        .name(env!("CARGO_PKG_NAME"))
        .version(env!("CARGO_PKG_VERSION"))
        .about("Every fixture of the official MCP conformance suite, served over MCP")
        // Kept for the hooks that change the catalog while it serves.
        .on_built(everything::list_changes::keep);
    // Without a command, `--addr` and the rest are the `http` command's.
    let mut args: Vec<_> = std::env::args_os().collect();
    if args.get(1).is_some_and(|first| {
        first.to_str().is_some_and(|first| {
            first.starts_with("--") && !matches!(first, "--help" | "--version")
        })
    }) {
        args.insert(1, "http".into());
    }
    cli.main_from(args)
}
