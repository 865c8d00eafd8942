//! `http` and `unix`: the tools as a network service (`http` needs carmy's `http` feature).
//! Their flags are shortcuts for configuration keys ([`config`](super::config)); what they
//! serve is what the effective configuration says.

use std::process::ExitCode;

#[cfg(feature = "http")]
use clap::ArgAction;
use clap::{Arg, Command, value_parser};

use carmy_mcp::McpServer;

use super::config::Settings;
#[cfg(feature = "http")]
use super::config::Transport;

#[cfg(feature = "http")]
const USAGE: u8 = 2;

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
        DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_STREAM_TIMEOUT, DEFAULT_WRITE_TIMEOUT,
    };
    Command::new("http")
        .about("Serve the tools over MCP's streamable HTTP on /mcp (health on /health)")
        .arg(
            Arg::new("addr")
                .long("addr")
                .value_name("ADDR")
                .help(
                    "Address to listen on, HOST:PORT; port 0 picks a free one \
                     (server.host, server.port) [default: 127.0.0.1:8080]",
                ),
        )
        .arg(
            Arg::new("token-file")
                .long("token-file")
                .value_name("PATH")
                .help(
                    "Bearer tokens, one `TOKEN PRINCIPAL [GRANT...]` per line \
                     (security.token_file, $CARMY_SECURITY__TOKEN_FILE or \
                     $CARMY_HTTP_TOKEN_FILE). Required off loopback",
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
                "Sessions (and subscriptions/listen streams) open at once, all principals \
                 together (503 past it) [default: {DEFAULT_MAX_SESSIONS}]"
            ),
        ))
        .arg(count(
            "max-sessions-per-principal",
            format!(
                "Sessions (and subscriptions/listen streams) one principal may have open at \
                 once (429 past it) [default: {DEFAULT_MAX_SESSIONS_PER_PRINCIPAL}]"
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
                "A session's stream (GET), or a subscriptions/listen stream, ends after this; \
                 clients reconnect [default: {}]",
                DEFAULT_STREAM_TIMEOUT.as_secs()
            ),
        ))
        .arg(count(
            "max-connections",
            format!(
                "Connections open at once; at the bound, the one waiting longest for a request \
                 (or else whose client reads nothing) is closed, or a new one is answered 503 if \
                 all are busy [default: {DEFAULT_MAX_CONNECTIONS}]"
            ),
        ))
        .arg(duration(
            "header-read-timeout",
            format!(
                "Time a request head may take to arrive, from its first byte [default: {}]",
                DEFAULT_HEADER_READ_TIMEOUT.as_secs()
            ),
        ))
        .arg(duration(
            "write-timeout",
            format!(
                "Time an answer or stream may wait for its client to take bytes, then its \
                 connection is closed [default: {}]",
                DEFAULT_WRITE_TIMEOUT.as_secs()
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
                .help("The socket file (server.socket)"),
        )
        .arg(grace())
        .args(grants())
}

/// Milliseconds as a duration.
fn millis(ms: u64) -> std::time::Duration {
    std::time::Duration::from_millis(ms)
}

/// Serves `runtime` over streamable HTTP as `settings` say (with the legacy HTTP+SSE endpoints
/// for the `sse` transport).
#[cfg(feature = "http")]
pub(super) async fn http(server: McpServer, settings: &Settings) -> ExitCode {
    use carmy_mcp::HttpServer;
    let (limits, security) = (&settings.server, &settings.security);
    let token_file = security.token_file.as_deref();
    let tokens = match token_file.map(read_tokens).transpose() {
        Ok(tokens) => tokens,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(USAGE);
        }
    };
    let addr = format!("{}:{}", limits.host, limits.port);
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("error: cannot listen on {addr}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let legacy_sse = limits.transport == Transport::Sse;
    let mut server = HttpServer::new(server)
        .allow_unauthenticated(security.allow_unauthenticated)
        .stateless(limits.stateless)
        .legacy_sse(legacy_sse)
        .max_body_bytes(limits.max_body_bytes)
        .request_timeout(millis(limits.timeout_ms))
        .max_sessions(limits.max_sessions)
        .max_sessions_per_principal(limits.max_sessions_per_principal)
        .session_idle_timeout(millis(limits.session_idle_timeout_ms))
        .stream_timeout(millis(limits.stream_timeout_ms))
        .max_connections(limits.max_connections)
        .header_read_timeout(millis(limits.header_read_timeout_ms))
        .write_timeout(millis(limits.write_timeout_ms))
        .grace_period(millis(limits.grace_period_ms))
        .rate_limit(security.rate_limit.limit())
        .cors(security.cors);
    if security.cors && security.cors_allow_credentials {
        server = server.cors_credentials(true);
    }
    if !security.allowed_hosts.is_empty() {
        server = server.allowed_hosts(security.allowed_hosts.iter().cloned());
    }
    if !security.allowed_origins.is_empty() {
        server = server.allowed_origins(security.allowed_origins.iter().cloned());
    }
    // Checked when the configuration loaded; an error here is one it could not see.
    let oauth = match security.oauth.build(tokens.is_some()) {
        Ok(oauth) => oauth,
        Err((key, problem)) => {
            eprintln!("error: {key}: {problem}");
            return ExitCode::from(USAGE);
        }
    };
    match (tokens, oauth) {
        (Some(tokens), _) => server = server.authenticator(tokens),
        #[cfg(feature = "oauth")]
        (None, Some(oauth)) => server = server.oauth(oauth),
        #[cfg(not(feature = "oauth"))]
        (None, Some(never)) => match never {},
        (None, None) => {
            eprintln!("warning: no bearer tokens: every caller gets the host context")
        }
    }
    if let Ok(local) = listener.local_addr() {
        announce(&format!("listening on http://{local}/mcp"));
        if legacy_sse {
            announce(&format!("legacy HTTP+SSE on http://{local}/sse"));
        }
    }
    match server.serve(listener).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error @ carmy_mcp::HttpError::Unauthenticated { .. }) => {
            eprintln!("error: {error}");
            eprintln!(
                "hint: --token-file PATH (security.token_file, $CARMY_SECURITY__TOKEN_FILE), \
                 or --allow-unauthenticated"
            );
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
fn read_tokens(path: &std::path::Path) -> Result<carmy_mcp::BearerTokens, String> {
    let shown = path.display();
    let text = super::private_file::read(path, "token file")?;
    let tokens = carmy_mcp::BearerTokens::parse(&text)
        .map_err(|error| format!("the token file {shown}: {error}"))?;
    if tokens.is_empty() {
        return Err(format!("the token file {shown} lists no token"));
    }
    Ok(tokens)
}

/// Serves `runtime` on the Unix socket `settings` name.
#[cfg(unix)]
pub(super) async fn unix(server: McpServer, settings: &Settings) -> ExitCode {
    let Some(path) = settings.server.socket.as_deref() else {
        eprintln!("error: no socket path: pass --path PATH, or set server.socket");
        return ExitCode::from(2);
    };
    let socket = match carmy_mcp::UnixSocket::bind(path) {
        Ok(socket) => socket.grace_period(millis(settings.server.grace_period_ms)),
        Err(error) => {
            eprintln!("error: cannot listen on {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    };
    announce(&format!("listening on unix:{}", path.display()));
    match socket.serve(server).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Prints the line that says where the server listens. Scripts and tests read the address
/// from it, maybe while it is being written: it goes out in one write, so a reader never
/// sees half an address (`eprintln!` may write a formatted line in pieces).
fn announce(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}
