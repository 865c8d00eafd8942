//! `shop`: the example store's binary. `shop mcp` serves it over MCP on stdio, with the policy
//! documents in `policies/` as resources (`--resource-root DIR` serves another directory);
//! `shop --help` lists the other subcommands.

use std::process::ExitCode;

fn main() -> ExitCode {
    carmy::cli::Cli::with_files(shop::shop(shop::Store::new()), shop::POLICIES)
        .name(env!("CARGO_PKG_NAME"))
        .version(env!("CARGO_PKG_VERSION"))
        .about("An example store whose tools cover every Carmy effect, served over MCP")
        .main()
}
