//! `http` and `unix`: the tools as a network service (with carmy's `mcp` feature; `http` also
//! needs the `http` feature).
#![cfg(feature = "mcp")]

use std::process::ExitCode;

use carmy_core::{Context, Runtime};
#[cfg(feature = "http")]
use clap::ArgAction;
use clap::{Arg, ArgMatches, Command, value_parser};

#[cfg(feature = "http")]
const USAGE: u8 = 2;

/// Where `http` reads its bearer tokens when `--token-file` is not given.
#[cfg(feature = "http")]
pub(super) const TOKEN_FILE_ENV: &str = "CARMY_HTTP_TOKEN_FILE";

/// Where `http` listens when `--addr` is not given.
#[cfg(feature = "http")]
pub(super) const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8080";

/// The `http` and `unix` subcommands this build can serve; their defaults are the library's.
pub(super) fn commands(grants: impl Fn() -> [Arg; 2]) -> Vec<Command> {
    [
        #[cfg(feature = "http")]
        http_command(&grants),
        #[cfg(unix)]
        unix_command(&grants),
    ]
    .into_iter()
    .collect()
}

fn grace() -> Arg {
    Arg::new("grace")
        .long("grace")
        .value_name("SECONDS")
        .value_parser(value_parser!(u64))
        .help(format!(
            "On SIGINT/SIGTERM, how long running calls get to finish before they are cancelled \
             [default: {}]",
            carmy_mcp::DEFAULT_GRACE_PERIOD.as_secs()
        ))
}

/// `--ID N`, a count.
#[cfg(feature = "http")]
fn count(id: &'static str, help: String) -> Arg {
    Arg::new(id)
        .long(id)
        .value_name("N")
        .value_parser(value_parser!(usize))
        .help(help)
}

/// `--ID SECONDS`, a duration.
#[cfg(feature = "http")]
fn duration(id: &'static str, help: String) -> Arg {
    Arg::new(id)
        .long(id)
        .value_name("SECONDS")
        .value_parser(value_parser!(u64))
        .help(help)
}

#[cfg(feature = "http")]
fn http_command(grants: &impl Fn() -> [Arg; 2]) -> Command {
    use carmy_mcp::{
        DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
        DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, DEFAULT_REQUEST_TIMEOUT,
        DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_STREAM_TIMEOUT,
    };
    Command::new("http")
        .about("Serve the tools over MCP's streamable HTTP on /mcp (health on /health)")
        .arg(
            Arg::new("addr")
                .long("addr")
                .value_name("ADDR")
                .help(format!(
                    "Address to listen on; port 0 picks a free one [default: {DEFAULT_HTTP_ADDR}]"
                )),
        )
        .arg(
            Arg::new("token-file")
                .long("token-file")
                .value_name("PATH")
                .help(format!(
                    "Bearer tokens, one `TOKEN PRINCIPAL [GRANT...]` per line; \
                     default: ${TOKEN_FILE_ENV}. Required off loopback"
                )),
        )
        .arg(
            Arg::new("allow-unauthenticated")
                .long("allow-unauthenticated")
                .action(ArgAction::SetTrue)
                .help("Serve a non-loopback address without tokens (anyone reaching it may call)"),
        )
        .arg(
            Arg::new("allow-host")
                .long("allow-host")
                .value_name("HOST")
                .action(ArgAction::Append)
                .help("Accept this Host (name or name:port) instead of the loopback names"),
        )
        .arg(
            Arg::new("allow-origin")
                .long("allow-origin")
                .value_name("ORIGIN")
                .action(ArgAction::Append)
                .help("Accept browser requests from this Origin, instead of loopback pages (http://localhost:*, http://127.0.0.1:*, http://[::1]:*)"),
        )
        .arg(
            Arg::new("stateless")
                .long("stateless")
                .action(ArgAction::SetTrue)
                .help("No sessions: every request stands alone"),
        )
        .arg(
            Arg::new("legacy-sse")
                .long("legacy-sse")
                .action(ArgAction::SetTrue)
                .help("Also serve the legacy HTTP+SSE transport (MCP 2024-11-05) on /sse and /messages, for clients that speak only that"),
        )
        .arg(
            Arg::new("max-body-bytes")
                .long("max-body-bytes")
                .value_name("BYTES")
                .value_parser(value_parser!(usize))
                .help(format!(
                    "Largest request body accepted (413 past it) [default: {DEFAULT_MAX_BODY_BYTES}]"
                )),
        )
        .arg(
            Arg::new("request-timeout")
                .long("request-timeout")
                .value_name("SECONDS")
                .value_parser(value_parser!(u64))
                .help(format!(
                    "Deadline of one HTTP request; its call is cancelled past it [default: {}]",
                    DEFAULT_REQUEST_TIMEOUT.as_secs()
                )),
        )
        .arg(count(
            "max-sessions",
            format!(
                "Sessions open at once, all principals together (503 past it) \
                 [default: {DEFAULT_MAX_SESSIONS}]"
            ),
        ))
        .arg(count(
            "max-sessions-per-principal",
            format!(
                "Sessions one principal may have open at once (429 past it) \
                 [default: {DEFAULT_MAX_SESSIONS_PER_PRINCIPAL}]"
            ),
        ))
        .arg(duration(
            "session-idle-timeout",
            format!(
                "A session with nothing in progress (no request, no open stream) is closed \
                 after this [default: {}]",
                DEFAULT_SESSION_IDLE_TIMEOUT.as_secs()
            ),
        ))
        .arg(duration(
            "stream-timeout",
            format!(
                "A session's stream (GET) ends after this; clients reconnect [default: {}]",
                DEFAULT_STREAM_TIMEOUT.as_secs()
            ),
        ))
        .arg(count(
            "max-connections",
            format!(
                "Connections open at once; at the bound, the one waiting longest for a request \
                 is closed [default: {DEFAULT_MAX_CONNECTIONS}]"
            ),
        ))
        .arg(duration(
            "header-read-timeout",
            format!(
                "Time a request head may take to arrive, from its first byte [default: {}]",
                DEFAULT_HEADER_READ_TIMEOUT.as_secs()
            ),
        ))
        .arg(grace())
        .args(grants())
}

#[cfg(unix)]
fn unix_command(grants: &impl Fn() -> [Arg; 2]) -> Command {
    Command::new("unix")
        .about("Serve the tools over MCP on a Unix socket (mode 0600, removed on exit)")
        .arg(
            Arg::new("path")
                .long("path")
                .value_name("PATH")
                .required(true)
                .help("The socket file"),
        )
        .arg(grace())
        .args(grants())
}

/// `--ID SECONDS`, or `default` when not given.
fn seconds(matches: &ArgMatches, id: &str, default: std::time::Duration) -> std::time::Duration {
    matches
        .get_one::<u64>(id)
        .map_or(default, |seconds| std::time::Duration::from_secs(*seconds))
}

#[cfg(feature = "http")]
pub(super) async fn http(
    runtime: Runtime,
    context: Context,
    name: &'static str,
    version: &'static str,
    matches: &ArgMatches,
) -> ExitCode {
    use carmy_mcp::{
        DEFAULT_GRACE_PERIOD, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES,
        DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
        DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_STREAM_TIMEOUT, HttpServer,
        McpServer,
    };
    let number =
        |id: &str, default: usize| matches.get_one::<usize>(id).copied().unwrap_or(default);

    let token_file = matches
        .get_one::<String>("token-file")
        .cloned()
        .or_else(|| {
            std::env::var(TOKEN_FILE_ENV)
                .ok()
                .filter(|path| !path.is_empty())
        });
    let tokens = match token_file.as_deref().map(read_tokens).transpose() {
        Ok(tokens) => tokens,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(USAGE);
        }
    };
    let addr = matches
        .get_one::<String>("addr")
        .map_or(DEFAULT_HTTP_ADDR, String::as_str);
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("error: cannot listen on {addr}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut server = HttpServer::new(
        McpServer::new(runtime)
            .context(context)
            .server_info(name, version),
    )
    .allow_unauthenticated(matches.get_flag("allow-unauthenticated"))
    .stateless(matches.get_flag("stateless"))
    .legacy_sse(matches.get_flag("legacy-sse"))
    .max_body_bytes(number("max-body-bytes", DEFAULT_MAX_BODY_BYTES))
    .request_timeout(seconds(matches, "request-timeout", DEFAULT_REQUEST_TIMEOUT))
    .max_sessions(number("max-sessions", DEFAULT_MAX_SESSIONS))
    .max_sessions_per_principal(number(
        "max-sessions-per-principal",
        DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
    ))
    .session_idle_timeout(seconds(
        matches,
        "session-idle-timeout",
        DEFAULT_SESSION_IDLE_TIMEOUT,
    ))
    .stream_timeout(seconds(matches, "stream-timeout", DEFAULT_STREAM_TIMEOUT))
    .max_connections(number("max-connections", DEFAULT_MAX_CONNECTIONS))
    .header_read_timeout(seconds(
        matches,
        "header-read-timeout",
        DEFAULT_HEADER_READ_TIMEOUT,
    ))
    .grace_period(seconds(matches, "grace", DEFAULT_GRACE_PERIOD));
    if let Some(hosts) = matches.get_many::<String>("allow-host") {
        server = server.allowed_hosts(hosts.cloned());
    }
    if let Some(origins) = matches.get_many::<String>("allow-origin") {
        server = server.allowed_origins(origins.cloned());
    }
    match tokens {
        Some(tokens) => server = server.authenticator(tokens),
        None => eprintln!("warning: no bearer tokens: every caller gets the host context"),
    }
    if let Ok(local) = listener.local_addr() {
        // Tests and scripts read the port from this line.
        eprintln!("listening on http://{local}/mcp");
        if matches.get_flag("legacy-sse") {
            eprintln!("legacy HTTP+SSE on http://{local}/sse");
        }
    }
    match server.serve(listener).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error @ carmy_mcp::HttpError::Unauthenticated { .. }) => {
            eprintln!("error: {error}");
            eprintln!("hint: --token-file PATH (or ${TOKEN_FILE_ENV}), or --allow-unauthenticated");
            ExitCode::from(USAGE)
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Reads a token file; refuses one other users may read.
#[cfg(feature = "http")]
fn read_tokens(path: &str) -> Result<carmy_mcp::BearerTokens, String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|error| format!("cannot read the token file {path}: {error}"))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "the token file {path} is readable by other users (mode {:o}); chmod 600 it",
                mode & 0o777
            ));
        }
    }
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read the token file {path}: {error}"))?;
    let tokens = carmy_mcp::BearerTokens::parse(&text)
        .map_err(|error| format!("the token file {path}: {error}"))?;
    if tokens.is_empty() {
        return Err(format!("the token file {path} lists no token"));
    }
    Ok(tokens)
}

#[cfg(unix)]
pub(super) async fn unix(
    runtime: Runtime,
    context: Context,
    name: &'static str,
    version: &'static str,
    matches: &ArgMatches,
) -> ExitCode {
    let path = matches.get_one::<String>("path").map_or("", String::as_str);
    let grace = seconds(matches, "grace", carmy_mcp::DEFAULT_GRACE_PERIOD);
    let socket = match carmy_mcp::UnixSocket::bind(path) {
        Ok(socket) => socket.grace_period(grace),
        Err(error) => {
            eprintln!("error: cannot listen on {path}: {error}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("listening on unix:{path}");
    let server = carmy_mcp::McpServer::new(runtime)
        .context(context)
        .server_info(name, version);
    let served = socket.serve(server).await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
