//! `carmy-mcp-testbed`: the testbed tools served on stdio. The integration tests drive it as a
//! child process; it is also something to point an MCP inspector at.
//!
//! ```text
//! carmy-mcp-testbed [--max-line-bytes N] [--grant GRANT]... [--principal NAME] [--faulty-tools]
//! ```
//!
//! `--faulty-tools` adds tools that panic, break their output schema, overrun their deadline,
//! and two slow writes (`faults.rs`).

mod faults;
mod tools;

use carmy_core::Context;
use carmy_mcp::McpServer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let mut server_options = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next().unwrap_or_else(|| {
                eprintln!("carmy-mcp-testbed: {name} needs a value");
                std::process::exit(2);
            })
        };
        match arg.as_str() {
            "--max-line-bytes" => match value("--max-line-bytes").parse() {
                Ok(bytes) => server_options.max_line_bytes = Some(bytes),
                Err(error) => {
                    eprintln!("carmy-mcp-testbed: --max-line-bytes: {error}");
                    return std::process::ExitCode::from(2);
                }
            },
            "--grant" => server_options.grants.push(value("--grant")),
            "--principal" => server_options.principal = Some(value("--principal")),
            "--faulty-tools" => server_options.faulty_tools = true,
            other => {
                eprintln!(
                    "carmy-mcp-testbed: unknown argument `{other}`; expected --max-line-bytes, --grant, --principal or --faulty-tools"
                );
                return std::process::ExitCode::from(2);
            }
        }
    }

    // Nobody listens to the probe out of process.
    let (probe, _) = tokio::sync::mpsc::unbounded_channel();
    let testbed = if server_options.faulty_tools {
        tools::testbed_with(probe, faults::register)
    } else {
        tools::testbed(probe)
    };
    let mut context = Context::new().with_grants(server_options.grants);
    if let Some(principal) = server_options.principal {
        context = context.with_principal(principal);
    }
    let mut server = McpServer::new(testbed.runtime)
        .context(context)
        .server_info("carmy-mcp-testbed", env!("CARGO_PKG_VERSION"));
    if let Some(bytes) = server_options.max_line_bytes {
        server = server.max_line_bytes(bytes);
    }
    match server.serve_stdio().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("carmy-mcp-testbed: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[derive(Default)]
struct Options {
    max_line_bytes: Option<usize>,
    grants: Vec<String>,
    principal: Option<String>,
    faulty_tools: bool,
}
