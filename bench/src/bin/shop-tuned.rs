//! `shop-tuned`: the example shop's own `main` (examples/shop/src/main.rs), linked with the code
//! that serves MCP first and with packed relative relocations (bench/build.rs). Built only here,
//! so that the example a newcomer copies stays a plain binary; `mcp-load` measures both.

use std::process::ExitCode;

fn main() -> ExitCode {
    let runtime = match shop::runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    // The shop's name, not this package's, so both builds introduce themselves alike.
    carmy::cli::Cli::new(runtime)
        .name("shop")
        .version(env!("CARGO_PKG_VERSION"))
        .about("An example store whose tools cover every Carmy effect, served over MCP")
        .main()
}
