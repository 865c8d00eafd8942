//! The command line, declared as types: what `carmy --help` shows is read from here.
//!
//! Parsing stops at what clap can check alone (a flag's shape, a number); what needs the
//! connection (is the protocol served, is the tool there) is the server's to answer.

use std::{path::PathBuf, time::Duration};

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Talk to any MCP server from the terminal.
#[derive(Debug, Parser)]
#[command(name = "carmy", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Top,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Top {
    /// Connect to an MCP server, send one request and print its answer.
    ///
    /// Exit codes: 0 ok; 1 the server reported an error (a JSON-RPC error, or a tool result
    /// with `isError`); 2 bad usage; 3 could not connect or initialize (or the connection was
    /// lost); 4 the server was silent past --timeout (a request is cancelled first); 130
    /// interrupted by Ctrl-C (the request is cancelled first).
    #[command(after_help = EXAMPLES)]
    Client(Client),
}

const EXAMPLES: &str = "\
Examples:
  carmy client -s 'shop mcp' list-tools
  carmy client -s 'shop mcp' call-tool -n search_products -a '{\"query\": \"mouse\"}'
  carmy client -t http -s http://127.0.0.1:8080/mcp --bearer TOKEN list-resources
  carmy client -t sse -s http://127.0.0.1:8080/sse list-prompts
  carmy client -t unix -s /tmp/shop.sock read-resource -u shop://catalog";

/// `--timeout` unless given: what the official TypeScript SDK waits by default. A server that
/// needs longer reports progress.
const DEFAULT_TIMEOUT: &str = "60";

/// `--max-pages` unless given: lists far longer than anyone reads on a terminal, and a bound on
/// what a server that never ends its list can make carmy hold.
const DEFAULT_MAX_PAGES: u32 = 1000;

#[derive(Debug, Args)]
pub(crate) struct Client {
    /// How to reach the server.
    #[arg(short = 't', long = "transport", value_enum, default_value_t = TransportKind::Stdio)]
    pub(crate) transport: TransportKind,

    /// The server: a command line for stdio (split as a shell would, e.g. "python3 server.py"),
    /// a URL for http (e.g. http://127.0.0.1:8080/mcp) or sse (e.g. http://127.0.0.1:8080/sse),
    /// a socket path for unix.
    #[arg(short = 's', long = "server", value_name = "SERVER")]
    pub(crate) server: String,

    /// The protocol revision and its lifecycle: 2025-11-25 (`initialize`) or 2026-07-28
    /// (`server/discover`, stateless). Without it, 2026-07-28 is tried first and an older server
    /// is spoken to as it expects.
    #[arg(long, value_enum, value_name = "VERSION")]
    pub(crate) protocol: Option<Protocol>,

    /// An HTTP header sent with every request (http and sse only), `NAME:VALUE`; repeatable.
    #[arg(long = "header", value_name = "NAME:VALUE", value_parser = parse_header)]
    pub(crate) headers: Vec<(String, String)>,

    /// A bearer token sent as `Authorization: Bearer TOKEN` (http and sse only).
    #[arg(long, value_name = "TOKEN")]
    pub(crate) bearer: Option<String>,

    /// Give up (exit 4) on a server silent for this many seconds: while opening the session,
    /// or during the request, which is then cancelled. Each progress notification restarts
    /// the wait; the time the user takes to answer the server's question does not count.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds,
          default_value = DEFAULT_TIMEOUT)]
    pub(crate) timeout: Duration,

    /// Follow a list (`list-tools`, …) for at most this many pages; a longer one is an error.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PAGES,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_pages: u32,

    /// Print the result as the server sent it (JSON), for scripts.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    #[command(subcommand)]
    pub(crate) command: Request,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportKind {
    /// A child process speaking MCP on its stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport (2024-11-05): the URL of its event stream.
    Sse,
    /// A Unix socket carrying MCP lines, as on stdio.
    Unix,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Protocol {
    #[value(name = "2025-11-25")]
    V2025_11_25,
    #[value(name = "2026-07-28")]
    V2026_07_28,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Request {
    /// List the tools.
    ListTools,
    /// Call a tool and print its result.
    CallTool(CallTool),
    /// List the resources.
    ListResources,
    /// List the resource templates.
    ListTemplates,
    /// Read a resource.
    ReadResource(ReadResource),
    /// Print each update of a resource until Ctrl-C.
    Subscribe(Subscribe),
    /// List the prompts.
    ListPrompts,
    /// Get a prompt with its arguments filled in.
    GetPrompt(GetPrompt),
    /// Ask for completions of a prompt's or a resource template's argument.
    Complete(Complete),
    /// Ask the server to send its log messages from LEVEL up (2025-11-25; on 2026-07-28 pass
    /// `--log-level` to `call-tool` instead).
    SetLogLevel(SetLogLevel),
    /// Check that the server answers.
    Ping,
}

#[derive(Debug, Args)]
pub(crate) struct CallTool {
    /// The tool's name.
    #[arg(short = 'n', long = "name")]
    pub(crate) name: String,
    /// The arguments, a JSON object.
    #[arg(short = 'a', long = "args", value_name = "JSON", default_value = "{}")]
    pub(crate) arguments: String,
    /// An idempotency key, sent as `_meta["carmy/request_id"]`: a Carmy server runs the call
    /// once per key and replays the first outcome to a retry.
    #[arg(long, value_name = "ID")]
    pub(crate) request_id: Option<String>,
    /// Receive the server's log messages from LEVEL up during the call, on stderr.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub(crate) log_level: Option<LogLevel>,
    /// Save the first image, audio or blob of the result to FILE (the next ones to FILE.2, …).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ReadResource {
    /// The resource's URI.
    #[arg(short = 'u', long = "uri")]
    pub(crate) uri: String,
    /// Save the first blob (or text) of the resource to FILE (the next ones to FILE.2, …).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct Subscribe {
    /// The resource's URI.
    #[arg(short = 'u', long = "uri")]
    pub(crate) uri: String,
}

#[derive(Debug, Args)]
pub(crate) struct GetPrompt {
    /// The prompt's name.
    #[arg(short = 'n', long = "name")]
    pub(crate) name: String,
    /// The arguments, a JSON object of strings.
    #[arg(short = 'a', long = "args", value_name = "JSON", default_value = "{}")]
    pub(crate) arguments: String,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("reference").required(true).args(["prompt", "template"])))]
pub(crate) struct Complete {
    /// Complete an argument of this prompt.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub(crate) prompt: Option<String>,
    /// Complete an argument of this resource template (its URI template).
    #[arg(short = 'r', long = "template", value_name = "TEMPLATE_URI")]
    pub(crate) template: Option<String>,
    /// The argument to complete.
    #[arg(long = "arg", value_name = "NAME")]
    pub(crate) argument: String,
    /// What has been typed of it so far.
    #[arg(long = "value", value_name = "PARTIAL", default_value = "")]
    pub(crate) value: String,
    /// Arguments already chosen, as a JSON object of strings (the completion's context).
    #[arg(long = "context", value_name = "JSON")]
    pub(crate) context: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct SetLogLevel {
    /// The lowest level to receive.
    #[arg(short = 'l', long = "level", value_enum)]
    pub(crate) level: LogLevel,
}

/// The syslog levels MCP uses, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("`{text}` is not NAME:VALUE"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("`{text}` has no header name"));
    }
    http::HeaderName::try_from(name).map_err(|error| format!("`{name}`: {error}"))?;
    let value = value.trim();
    http::HeaderValue::try_from(value).map_err(|error| format!("`{value}`: {error}"))?;
    Ok((name.to_owned(), value.to_owned()))
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| format!("`{text}`: a timeout is a positive number of seconds"))
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Cli, parse_header, parse_seconds};

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn headers_are_name_colon_value() {
        assert_eq!(
            parse_header("X-Trace: abc:1").unwrap(),
            ("X-Trace".to_owned(), "abc:1".to_owned())
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header(": value").is_err());
        assert!(parse_header("bad name: v").is_err());
    }

    #[test]
    fn timeouts_are_positive_seconds() {
        assert_eq!(parse_seconds("1.5").unwrap().as_millis(), 1500);
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("soon").is_err());
    }

    #[test]
    fn the_timeout_is_a_minute_unless_given() {
        let parse = |args: &[&str]| match Cli::try_parse_from(args.iter().copied()) {
            Ok(Cli {
                command: super::Top::Client(client),
            }) => client.timeout,
            Err(error) => panic!("{error}"),
        };
        assert_eq!(parse(&["carmy", "client", "-s", "x", "ping"]).as_secs(), 60);
        assert_eq!(
            parse(&["carmy", "client", "-s", "x", "--timeout", "0.5", "ping"]).as_millis(),
            500
        );
    }

    #[test]
    fn complete_needs_a_prompt_or_a_template() {
        let parse = |args: &[&str]| Cli::try_parse_from(args.iter().copied());
        assert!(parse(&["carmy", "client", "-s", "x", "complete", "--arg", "a"]).is_err());
        assert!(
            parse(&[
                "carmy", "client", "-s", "x", "complete", "-p", "p", "--arg", "a"
            ])
            .is_ok()
        );
        assert!(
            parse(&[
                "carmy", "client", "-s", "x", "complete", "-p", "p", "-r", "t", "--arg", "a"
            ])
            .is_err()
        );
    }
}
