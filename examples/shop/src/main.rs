//! `shop`: the example store's binary. `shop mcp` serves it over MCP on stdio; `shop --help`
//! lists the other subcommands.

use std::process::ExitCode;

fn main() -> ExitCode {
    let runtime = match shop::runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    carmy::cli::Cli::new(runtime)
        .name(env!("CARGO_PKG_NAME"))
        .version(env!("CARGO_PKG_VERSION"))
        .about("An example store whose tools cover every Carmy effect, served over MCP")
        .main()
}
