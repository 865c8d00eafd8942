//! `http` and `unix`: the tools as a network service.

use std::process::ExitCode;

use carmy_core::{Context, Runtime};
use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};

const USAGE: u8 = 2;

/// Where `http` reads its bearer tokens when `--token-file` is not given.
#[cfg(feature = "http")]
pub(super) const TOKEN_FILE_ENV: &str = "CARMY_HTTP_TOKEN_FILE";

pub(super) fn commands(grants: impl Fn() -> [Arg; 2]) -> [Command; 2] {
    let grace = || {
        Arg::new("grace")
            .long("grace")
            .value_name("SECONDS")
            .value_parser(value_parser!(u64))
            .default_value("10")
            .help(
                "On SIGINT/SIGTERM, how long running calls get to finish before they are cancelled",
            )
    };
    let http = Command::new("http")
        .about("Serve the tools over MCP's streamable HTTP on /mcp (health on /health)")
        .arg(
            Arg::new("addr")
                .long("addr")
                .value_name("ADDR")
                .default_value("127.0.0.1:8080")
                .help("Address to listen on; port 0 picks a free one"),
        )
        .arg(
            Arg::new("token-file")
                .long("token-file")
                .value_name("PATH")
                .help(
                    "Bearer tokens, one `TOKEN PRINCIPAL [GRANT...]` per line; \
                     default: $CARMY_HTTP_TOKEN_FILE. Required off loopback",
                ),
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
                .help("Accept browser requests from this Origin (default: none)"),
        )
        .arg(
            Arg::new("stateless")
                .long("stateless")
                .action(ArgAction::SetTrue)
                .help("No sessions: every request stands alone"),
        )
        .arg(
            Arg::new("max-body-bytes")
                .long("max-body-bytes")
                .value_name("BYTES")
                .value_parser(value_parser!(usize))
                .default_value("4194304")
                .help("Largest request body accepted (413 past it)"),
        )
        .arg(
            Arg::new("request-timeout")
                .long("request-timeout")
                .value_name("SECONDS")
                .value_parser(value_parser!(u64))
                .default_value("120")
                .help("Deadline of one HTTP request; its call is cancelled past it"),
        )
        .arg(grace())
        .args(grants());
    let unix = Command::new("unix")
        .about("Serve the tools over MCP on a Unix socket (mode 0600, removed on exit)")
        .arg(
            Arg::new("path")
                .long("path")
                .value_name("PATH")
                .required(true)
                .help("The socket file"),
        )
        .arg(grace())
        .args(grants());
    [http, unix]
}

#[cfg(feature = "mcp")]
fn seconds(matches: &ArgMatches, id: &str) -> std::time::Duration {
    std::time::Duration::from_secs(matches.get_one::<u64>(id).copied().unwrap_or_default())
}

#[cfg(feature = "http")]
pub(super) async fn http(
    runtime: Runtime,
    context: Context,
    name: &'static str,
    version: &'static str,
    matches: &ArgMatches,
) -> ExitCode {
    use carmy_mcp::McpServer;

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
    let addr = matches.get_one::<String>("addr").map_or("", String::as_str);
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("error: cannot listen on {addr}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut server = McpServer::new(runtime)
        .context(context)
        .server_info(name, version)
        .http()
        .allow_unauthenticated(matches.get_flag("allow-unauthenticated"))
        .stateless(matches.get_flag("stateless"))
        .max_body_bytes(
            matches
                .get_one::<usize>("max-body-bytes")
                .copied()
                .unwrap_or_default(),
        )
        .request_timeout(seconds(matches, "request-timeout"))
        .grace_period(seconds(matches, "grace"));
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

#[cfg(not(feature = "http"))]
pub(super) async fn http(
    _: Runtime,
    _: Context,
    _: &'static str,
    _: &'static str,
    _: &ArgMatches,
) -> ExitCode {
    eprintln!("error: this binary was built without carmy's `http` feature");
    ExitCode::from(USAGE)
}

#[cfg(all(feature = "mcp", unix))]
pub(super) async fn unix(
    runtime: Runtime,
    context: Context,
    name: &'static str,
    version: &'static str,
    matches: &ArgMatches,
) -> ExitCode {
    let path = matches.get_one::<String>("path").map_or("", String::as_str);
    let socket = match carmy_mcp::UnixSocket::bind(path) {
        Ok(socket) => socket.grace_period(seconds(matches, "grace")),
        Err(error) => {
            eprintln!("error: cannot listen on {path}: {error}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("listening on unix:{path}");
    let served = carmy_mcp::McpServer::new(runtime)
        .context(context)
        .server_info(name, version)
        .serve_unix_socket(socket, carmy_mcp::shutdown_signal())
        .await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(not(all(feature = "mcp", unix)))]
pub(super) async fn unix(
    _: Runtime,
    _: Context,
    _: &'static str,
    _: &'static str,
    _: &ArgMatches,
) -> ExitCode {
    eprintln!("error: Unix sockets need carmy's `mcp` feature, on Unix");
    ExitCode::from(USAGE)
}
