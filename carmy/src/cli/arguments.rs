//! The subcommands and their flags, as clap reads them.

use clap::{Arg, ArgAction, Command};

use super::config;
#[cfg(feature = "fs")]
use super::files;
use super::network;
use super::served::Served;
#[cfg(feature = "store")]
use super::store;

/// The command line of a binary named `name`, with the flags `served` can take.
// What is served adds flags only with `fs` or `store`.
#[cfg_attr(not(any(feature = "fs", feature = "store")), expect(unused_variables))]
pub(super) fn command(
    name: &'static str,
    version: &'static str,
    about: &'static str,
    served: &Served,
) -> Command {
    let grants = || {
        [
            Arg::new("grant")
                .long("grant")
                .value_name("GRANT")
                .action(ArgAction::Append)
                .help("Grant a permission to every call, e.g. `confirm:cancel_order`"),
            Arg::new("principal")
                .long("principal")
                .value_name("NAME")
                .help("Name the caller (idempotency keys are scoped by principal)"),
        ]
    };
    let mcp = Command::new("mcp")
        .about("Serve the tools over MCP on stdin/stdout")
        .args(grants());
    let json = || {
        Arg::new("json")
            .long("json")
            .action(ArgAction::SetTrue)
            .help("Print the list as JSON")
    };
    let tools = Command::new("tools").about("List the tools").arg(json());
    let resources = Command::new("resources")
        .about("List the resources and resource templates, served files included")
        .arg(json());
    let prompts = Command::new("prompts")
        .about("List the prompts and their arguments")
        .arg(json());
    let schema = Command::new("schema")
        .about(
            "Print a tool's input and output schemas, or a resource template's or a prompt's \
             input schema",
        )
        .arg(
            Arg::new("name")
                .required(true)
                .help("The tool's, resource's or prompt's name (or a resource's URI)"),
        )
        .arg(
            Arg::new("kind")
                .long("kind")
                .value_name("KIND")
                .value_parser(["tool", "resource", "prompt"])
                .help("Look only among the tools, the resources or the prompts"),
        );
    let call = Command::new("call")
        .about("Run one call in process and print its outcome as JSON")
        .arg(Arg::new("tool").required(true).help("The tool's name"))
        .arg(
            Arg::new("arguments")
                .default_value("{}")
                .help("The arguments, as a JSON object"),
        )
        .arg(
            Arg::new("request-id")
                .long("request-id")
                .value_name("ID")
                .help("Make the call idempotent under this request id"),
        )
        .args(grants());
    let serve = Command::new("serve")
        .about("Serve the tools over the transport the configuration picks (stdio by default)")
        .args(serve_args())
        .args(grants());
    let config = Command::new("config")
        .about("Print the effective configuration and where each value came from")
        .args(serve_args())
        .args(grants())
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("Print it as JSON: a list of {key, value, from}"),
        )
        .arg(
            Arg::new("keys")
                .long("keys")
                .action(ArgAction::SetTrue)
                .help("Print every key, its default, variable and flags, as a Markdown table"),
        );
    let mut command = Command::new(name)
        .version(version)
        .about(about)
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommands([serve, mcp])
        .subcommands(network::commands(grants))
        .subcommands([config, tools, resources, prompts, schema, call]);
    // Every serving shortcut reads the configuration too.
    for serving in ["mcp", "http", "unix"] {
        if command.find_subcommand(serving).is_some() {
            command =
                command.mut_subcommand(serving, |sub| sub.arg(config_arg()).arg(log_level_arg()));
        }
    }
    // The client's user may confirm calls on every transport.
    for serving in ["serve", "mcp", "http", "unix", "config"] {
        if command.find_subcommand(serving).is_some() {
            command = command.mut_subcommand(serving, |sub| sub.arg(confirm_via_client_arg()));
        }
    }
    // Replicas share the keys of their round trips; stdio serves one client in one process.
    for serving in ["serve", "http", "unix", "config"] {
        if command.find_subcommand(serving).is_some() {
            command = command.mut_subcommand(serving, |sub| sub.arg(state_keys_file_arg()));
        }
    }
    #[cfg(feature = "fs")]
    let command = match served {
        Served::Files { .. } => files::add_arg(command),
        Served::Runtime(_) | Served::Builder(_) => command,
    };
    // Only a runtime built here can be given a store; `Cli::new`'s keeps its own.
    #[cfg(feature = "store")]
    let command = match served {
        Served::Files { .. } | Served::Builder(_) => store::add_arg(command, name),
        Served::Runtime(_) => command,
    };
    command
}

/// `--confirm-via-client`.
fn confirm_via_client_arg() -> Arg {
    Arg::new("confirm-via-client")
        .long("confirm-via-client")
        .action(ArgAction::SetTrue)
        .help(
            "Ask the client's user to approve each call that needs confirmation the host did \
             not grant (MCP elicitation)",
        )
}

/// `--state-keys-file PATH`.
fn state_keys_file_arg() -> Arg {
    Arg::new("state-keys-file")
        .long("state-keys-file")
        .value_name("PATH")
        .help(
            "Seal the state of 2026-07-28 round trips with these keys, one `ID KEY` per line,              the first sealing (security.state_keys_file); the same file on every replica.              Required on the network with a PostgreSQL or Redis store",
        )
}

/// `--config FILE`.
fn config_arg() -> Arg {
    Arg::new("config")
        .long("config")
        .short('c')
        .value_name("FILE")
        .help(format!(
            "Read the configuration from FILE (TOML, YAML or JSON, by extension) \
             [env: {}]",
            config::CONFIG_ENV
        ))
}

/// `-l LEVEL`.
fn log_level_arg() -> Arg {
    Arg::new("log-level")
        .long("log-level")
        .short('l')
        .value_name("LEVEL")
        .help("Log at LEVEL (error, warn, info, debug, trace) or by filter directives (logging.level) [default: warn]")
}

/// What `serve` and `config` take beside the host context: the keys one most often changes.
fn serve_args() -> [Arg; 5] {
    [
        config_arg(),
        Arg::new("transport")
            .long("transport")
            .short('t')
            .value_name("TRANSPORT")
            .value_parser(["stdio", "http", "sse", "unix"])
            .help("stdio, http, sse (HTTP with the legacy HTTP+SSE endpoints) or unix (server.transport) [default: stdio]"),
        Arg::new("host")
            .long("host")
            .value_name("HOST")
            .help("The HTTP address to listen on (server.host) [default: 127.0.0.1]"),
        Arg::new("port")
            .long("port")
            .short('p')
            .value_name("PORT")
            .value_parser(clap::value_parser!(u16))
            .help("The HTTP port; 0 picks a free one (server.port) [default: 8080]"),
        log_level_arg(),
    ]
}
