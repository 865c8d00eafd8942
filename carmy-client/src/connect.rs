//! From `-t`/`-s` and `--protocol` to an initialized session.
//!
//! Every failure here is exit 3 ("could not connect"), except a command line that cannot work
//! whatever the server does (an empty `-s`, `--header` on stdio), which is bad usage (2), and a
//! server silent past `--timeout`, which is 4 as it is for a request.

use std::{collections::HashMap, future::Future, time::Duration};

use rmcp::{
    model::ProtocolVersion,
    service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};

use crate::{
    args::{Client, Protocol, TransportKind},
    exit::Failure,
    handler::Handler,
    sse,
};

pub(crate) type Session = RunningService<RoleClient, Handler>;

/// The lifecycle `--protocol` asks for. Without it carmy does what rmcp's client calls `Auto`:
/// `server/discover` first, and the `initialize` handshake when the server turns out to be
/// older (it answers the probe with an error, or not at all within rmcp's 10 seconds).
pub(crate) fn lifecycle(protocol: Option<Protocol>) -> ClientLifecycleMode {
    match protocol {
        Some(Protocol::V2025_11_25) => ClientLifecycleMode::Initialize,
        Some(Protocol::V2026_07_28) => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        None => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
    }
}

/// Starts (stdio) or reaches (http, sse, unix) the server and opens a session.
pub(crate) async fn connect(client: &Client, handler: Handler) -> Result<Session, Failure> {
    let over_http = matches!(client.transport, TransportKind::Http | TransportKind::Sse);
    if !over_http && (!client.headers.is_empty() || client.bearer.is_some()) {
        return Err(Failure::Usage(
            "--header and --bearer apply to -t http and -t sse only".to_owned(),
        ));
    }
    let lifecycle = lifecycle(client.protocol);
    let session = match client.transport {
        TransportKind::Stdio => {
            let transport = child_process(&client.server)?;
            within(
                client.timeout,
                handler.serve_with_lifecycle(transport, lifecycle),
            )
            .await?
        }
        TransportKind::Http => {
            let transport = StreamableHttpClientTransport::from_config(http_config(client)?);
            within(
                client.timeout,
                handler.serve_with_lifecycle(transport, lifecycle),
            )
            .await?
        }
        TransportKind::Unix => {
            let path = &client.server;
            let stream = within(client.timeout, async {
                tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(|error| {
                        rmcp::service::ClientInitializeError::ConnectionClosed(format!(
                            "cannot connect to the socket {path}: {error}"
                        ))
                    })
            })
            .await?;
            within(
                client.timeout,
                handler.serve_with_lifecycle(stream, lifecycle),
            )
            .await?
        }
        TransportKind::Sse => {
            // The transport predates 2026-07-28: its servers know the `initialize` handshake.
            if client.protocol == Some(Protocol::V2026_07_28) {
                return Err(Failure::Usage(
                    "-t sse is the 2024-11-05 transport, which 2026-07-28 does not run on; \
                     use -t http"
                        .to_owned(),
                ));
            }
            check_url(&client.server)?;
            let opening = sse::connect(&client.server, headers(client)?, client.bearer.as_deref());
            let transport = tokio::time::timeout(client.timeout, opening)
                .await
                .map_err(|_| timed_out("the event stream and its endpoint", client.timeout))??;
            within(
                client.timeout,
                handler.serve_with_lifecycle(transport, ClientLifecycleMode::Initialize),
            )
            .await?
        }
    };
    Ok(session)
}

/// `future`, opening the session: given up on after `timeout`.
async fn within<T>(
    timeout: Duration,
    future: impl Future<Output = Result<T, rmcp::service::ClientInitializeError>>,
) -> Result<T, Failure> {
    tokio::time::timeout(timeout, future)
        .await
        .map_err(|_| timed_out("initialize (or server/discover)", timeout))?
        .map_err(Failure::from_initialize)
}

/// The failure of a session not opened within `timeout`, waiting for `what`.
fn timed_out(what: &str, timeout: Duration) -> Failure {
    Failure::Timeout(format!(
        "no answer to {what} within {} s; no session was opened (--timeout SECONDS waits longer)",
        timeout.as_secs_f64()
    ))
}

/// The stdio server: `-s` split as a POSIX shell would (leading `NAME=VALUE` words set the
/// server's environment, as in a shell: `-s "RUST_LOG=debug shop mcp"`), its stderr left on
/// ours so that its own complaints reach the user.
fn child_process(server: &str) -> Result<TokioChildProcess, Failure> {
    let not_a_command = || {
        Failure::Usage(format!(
            "-s `{server}` is not a command line (empty, or an unclosed quote)"
        ))
    };
    let words = shlex::split(server).ok_or_else(not_a_command)?;
    let (assignments, command_line) = split_assignments(&words);
    let (program, arguments) = command_line.split_first().ok_or_else(not_a_command)?;
    let mut command = tokio::process::Command::new(program);
    // A server must not outlive carmy: if the session ends without the graceful close (a
    // timeout while initializing, Ctrl-C), rmcp's cleanup task may never run before the
    // runtime stops, and the child would be left running, holding carmy's stderr open.
    command.args(arguments).envs(assignments).kill_on_drop(true);
    TokioChildProcess::new(command)
        .map_err(|error| Failure::Connect(format!("cannot start `{program}`: {error}")))
}

/// The leading `NAME=VALUE` words, and the command line after them.
fn split_assignments(words: &[String]) -> (Vec<(&str, &str)>, &[String]) {
    let is_name = |name: &str| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let assignments: Vec<(&str, &str)> = words
        .iter()
        .map_while(|word| word.split_once('=').filter(|(name, _)| is_name(name)))
        .collect();
    let rest = &words[assignments.len()..];
    (assignments, rest)
}

fn http_config(client: &Client) -> Result<StreamableHttpClientTransportConfig, Failure> {
    check_url(&client.server)?;
    let headers: HashMap<_, _> = headers(client)?
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let mut config = StreamableHttpClientTransportConfig::with_uri(client.server.as_str())
        .custom_headers(headers);
    if let Some(token) = &client.bearer {
        config = config.auth_header(token.as_str());
    }
    Ok(config)
}

/// The `--header`s.
fn headers(client: &Client) -> Result<http::HeaderMap, Failure> {
    let mut headers = http::HeaderMap::new();
    for (name, value) in &client.headers {
        // Both were checked when the command line was parsed (src/args.rs).
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|error| Failure::Usage(format!("--header {name}: {error}")))?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|error| Failure::Usage(format!("--header {name}: {error}")))?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// An `http://` URL, or bad usage: reqwest would only fail later, with a vaguer message, and
/// with the status of an unreachable server.
fn check_url(url: &str) -> Result<(), Failure> {
    let uri = http::Uri::try_from(url)
        .map_err(|error| Failure::Usage(format!("-s `{url}` is not a URL: {error}")))?;
    match uri.scheme_str() {
        Some("http") if uri.host().is_some() => Ok(()),
        // rmcp's `reqwest` feature would build a TLS stack (rustls with aws-lc, a C library
        // built with cmake); carmy leaves it out until it is chosen on purpose.
        Some("https") => Err(Failure::Usage(format!(
            "-s `{url}`: this build of carmy speaks plain http:// only (no TLS yet)"
        ))),
        _ => Err(Failure::Usage(format!(
            "-s `{url}` is not an http:// URL (e.g. http://127.0.0.1:8080/mcp)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::{check_url, split_assignments};

    #[test]
    fn http_takes_http_urls_only() {
        assert!(check_url("http://127.0.0.1:8080/mcp").is_ok());
        assert!(check_url("http://localhost/mcp").is_ok());
        for url in [
            "https://example.com/mcp",
            "not a url",
            "127.0.0.1:8080",
            "ftp://x/y",
            "/mcp",
        ] {
            assert!(check_url(url).is_err(), "{url}");
        }
    }

    #[test]
    fn leading_assignments_set_the_environment() {
        let words: Vec<String> = shlex::split("RUST_LOG=debug A_1=x=y shop mcp X=1").unwrap();
        let (assignments, rest) = split_assignments(&words);
        assert_eq!(assignments, [("RUST_LOG", "debug"), ("A_1", "x=y")]);
        assert_eq!(rest, ["shop", "mcp", "X=1"]);
        let words: Vec<String> = shlex::split("./server --opt=1").unwrap();
        assert_eq!(split_assignments(&words).1, ["./server", "--opt=1"]);
    }
}
