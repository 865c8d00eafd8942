//! What a configuration says: every key, its type and its default.
//!
//! Sections and keys follow the mcp.rs layout where Carmy has the feature (`server`,
//! `resources`, `security`, `logging`), plus Carmy's own (`store`, the host context, the HTTP
//! limits). Durations are in milliseconds, as `timeout_ms` is there. [`KEYS`] documents every
//! key, in the order `config` prints them; the guide's reference table (docs/06-configuration.md) is checked against it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The whole configuration of a serving command line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct Settings {
    pub(in crate::cli) server: Server,
    pub(in crate::cli) security: Security,
    pub(in crate::cli) resources: Resources,
    pub(in crate::cli) logging: Logging,
    pub(in crate::cli) tool_settings: ToolSettings,
    /// `memory`, a file, `postgres://...` or `redis://...`; unset: the SQLite file in the
    /// user's data directory.
    pub(in crate::cli) store: Option<String>,
    pub(in crate::cli) request_ids: RequestIds,
}

/// `[request_ids]`: how many request ids of writes the store keeps, and how many bytes they
/// and their outcomes take, per principal and in all. Unset: the store's own bound, a memory's
/// for `memory`, a disk's for a file or a database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct RequestIds {
    pub(in crate::cli) max_per_principal: Option<usize>,
    pub(in crate::cli) max_bytes_per_principal: Option<usize>,
    pub(in crate::cli) max: Option<usize>,
    pub(in crate::cli) max_bytes: Option<usize>,
}

impl RequestIds {
    /// The keys that are set, each with its value.
    pub(in crate::cli) fn set(&self) -> Vec<(&'static str, usize)> {
        [
            ("request_ids.max_per_principal", self.max_per_principal),
            (
                "request_ids.max_bytes_per_principal",
                self.max_bytes_per_principal,
            ),
            ("request_ids.max", self.max),
            ("request_ids.max_bytes", self.max_bytes),
        ]
        .into_iter()
        .filter_map(|(key, value)| Some((key, value?)))
        .collect()
    }
}

/// How the server is reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(in crate::cli) enum Transport {
    /// MCP on stdin/stdout.
    #[default]
    Stdio,
    /// Streamable HTTP on `/mcp`.
    Http,
    /// Streamable HTTP with the legacy HTTP+SSE transport beside it (`/sse`, `/messages`).
    Sse,
    /// A Unix domain socket.
    Unix,
}

impl Transport {
    pub(in crate::cli) fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::Sse => "sse",
            Self::Unix => "unix",
        }
    }
}

/// `[server]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct Server {
    /// The name reported to clients; unset: the binary's.
    pub(in crate::cli) name: Option<String>,
    /// The version reported to clients; unset: the binary's.
    pub(in crate::cli) version: Option<String>,
    pub(in crate::cli) transport: Transport,
    pub(in crate::cli) host: String,
    pub(in crate::cli) port: u16,
    /// The Unix socket's path.
    pub(in crate::cli) socket: Option<PathBuf>,
    pub(in crate::cli) grace_period_ms: u64,
    pub(in crate::cli) stateless: bool,
    pub(in crate::cli) max_connections: usize,
    /// The deadline of one HTTP request.
    pub(in crate::cli) timeout_ms: u64,
    pub(in crate::cli) max_body_bytes: usize,
    pub(in crate::cli) max_sessions: usize,
    pub(in crate::cli) max_sessions_per_principal: usize,
    pub(in crate::cli) session_idle_timeout_ms: u64,
    pub(in crate::cli) stream_timeout_ms: u64,
    pub(in crate::cli) header_read_timeout_ms: u64,
    pub(in crate::cli) write_timeout_ms: u64,
    /// Threads that serve; 0: one on stdio, one per core over HTTP and Unix sockets.
    pub(in crate::cli) worker_threads: usize,
}

/// Milliseconds in `duration`, for a default.
fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Default for Server {
    fn default() -> Self {
        use carmy_mcp::{
            DEFAULT_GRACE_PERIOD, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES,
            DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
            DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_STREAM_TIMEOUT,
            DEFAULT_WRITE_TIMEOUT,
        };
        Self {
            name: None,
            version: None,
            transport: Transport::Stdio,
            host: "127.0.0.1".to_owned(),
            port: 8080,
            socket: None,
            grace_period_ms: millis(DEFAULT_GRACE_PERIOD),
            stateless: false,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            timeout_ms: millis(DEFAULT_REQUEST_TIMEOUT),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
            session_idle_timeout_ms: millis(DEFAULT_SESSION_IDLE_TIMEOUT),
            stream_timeout_ms: millis(DEFAULT_STREAM_TIMEOUT),
            header_read_timeout_ms: millis(DEFAULT_HEADER_READ_TIMEOUT),
            write_timeout_ms: millis(DEFAULT_WRITE_TIMEOUT),
            worker_threads: 0,
        }
    }
}

/// `[security]`: who may call, and what the host grants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct Security {
    /// Bearer tokens for HTTP, one `TOKEN PRINCIPAL [GRANT...]` per line.
    pub(in crate::cli) token_file: Option<PathBuf>,
    pub(in crate::cli) allow_unauthenticated: bool,
    /// Host headers accepted; empty: the loopback names.
    pub(in crate::cli) allowed_hosts: Vec<String>,
    /// Browser origins accepted; empty: loopback pages.
    pub(in crate::cli) allowed_origins: Vec<String>,
    /// The principal every call runs as, unless a token names another.
    pub(in crate::cli) principal: Option<String>,
    /// Grants every call holds (`confirm:cancel_order`).
    pub(in crate::cli) grants: Vec<String>,
    pub(in crate::cli) confirm_via_client: bool,
    /// HTTP requests one client address may send (429 past it).
    pub(in crate::cli) rate_limit: Rate,
    /// CORS answers for pages of the allowed origins.
    pub(in crate::cli) cors: bool,
    pub(in crate::cli) cors_allow_credentials: bool,
    /// OAuth access tokens on HTTP, instead of a token file.
    pub(in crate::cli) oauth: OAuth,
}

/// `[security.oauth]`: an OAuth 2.1 resource server, on when `issuer` is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct OAuth {
    pub(in crate::cli) issuer: Option<String>,
    /// This server's MCP endpoint as clients reach it; the tokens' audience.
    pub(in crate::cli) resource: Option<String>,
    /// The audience tokens name, when not the resource URL.
    pub(in crate::cli) audience: Option<String>,
    /// The issuer's JWKS; unset: found in its metadata.
    pub(in crate::cli) jwks_uri: Option<String>,
    pub(in crate::cli) required_scopes: Vec<String>,
    /// `SCOPE GIVES...`, a token-file line's shape: grants and `allow:` rules.
    pub(in crate::cli) scopes: Vec<String>,
}

impl Default for Security {
    fn default() -> Self {
        Self {
            token_file: None,
            allow_unauthenticated: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            principal: None,
            grants: Vec::new(),
            confirm_via_client: false,
            rate_limit: Rate::default(),
            cors: true,
            cors_allow_credentials: false,
            oauth: OAuth::default(),
        }
    }
}

/// `[tool_settings]`: what the runtime applies to every tool that says nothing of its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct ToolSettings {
    /// Calls one principal may make of each tool.
    pub(in crate::cli) rate_limit: Rate,
    /// The deadline of a tool without a `timeout`; unset: the runtime's (60 s).
    pub(in crate::cli) max_execution_time_ms: Option<u64>,
    /// Access rules every caller is held to (`effect:read`, `orders.*`); unset: every tool.
    pub(in crate::cli) allowed_tools: Option<Vec<String>>,
    /// Tool rules (`effect:destructive`, `send_*`) whose tools need confirmation.
    pub(in crate::cli) require_confirmation: Option<Vec<String>>,
    /// The largest result handed back; unset: the runtime's (8 MiB).
    pub(in crate::cli) max_result_bytes: Option<usize>,
}

impl ToolSettings {
    /// The access `allowed_tools` describes, if set (its rules are checked by `validate`).
    pub(in crate::cli) fn access(&self) -> Option<carmy_core::Access> {
        carmy_core::Access::parse(self.allowed_tools.as_ref()?).ok()
    }

    /// The tools `require_confirmation` describes, if set (its rules are checked by `validate`).
    pub(in crate::cli) fn confirmation(&self) -> Option<carmy_core::Access> {
        carmy_core::Access::parse(self.require_confirmation.as_ref()?).ok()
    }
}

/// A token bucket: `requests_per_minute`, up to `burst_size` at once (default: the minute's
/// requests). Unset: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct Rate {
    pub(in crate::cli) requests_per_minute: Option<u32>,
    pub(in crate::cli) burst_size: Option<u32>,
}

impl Rate {
    /// The limit it describes (checked by `validate`: no zero, no burst without a rate).
    pub(in crate::cli) fn limit(self) -> carmy_core::RateLimit {
        match (self.requests_per_minute, self.burst_size) {
            (Some(requests), Some(burst)) if requests > 0 && burst > 0 => {
                carmy_core::RateLimit::per_minute(requests).burst(burst)
            }
            (Some(requests), None) if requests > 0 => carmy_core::RateLimit::per_minute(requests),
            _ => carmy_core::RateLimit::unlimited(),
        }
    }
}

/// `[resources]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct Resources {
    /// The directory served as resources; unset: the binary's own documents.
    pub(in crate::cli) root_path: Option<PathBuf>,
}

/// `[logging]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct Logging {
    /// A level (`info`) or `tracing` filter directives (`warn,shop=debug`).
    pub(in crate::cli) level: String,
    pub(in crate::cli) format: LogFormat,
    /// Append the log to this file instead of writing it to stderr.
    pub(in crate::cli) file: Option<PathBuf>,
}

/// The filter when neither `logging.level` nor `RUST_LOG` says otherwise: warnings, except
/// rmcp's one line per error response, which an agent's bad call is not.
const DEFAULT_FILTER: &str = "warn,rmcp::service=error";

impl Default for Logging {
    fn default() -> Self {
        Self {
            level: DEFAULT_FILTER.to_owned(),
            format: LogFormat::Full,
            file: None,
        }
    }
}

/// How each log line is laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(in crate::cli) enum LogFormat {
    /// Time, level, span context, target, message and fields.
    #[default]
    Full,
    /// The same, shorter: span names without their fields.
    Compact,
    /// Over several lines, for reading at a terminal.
    Pretty,
    /// One JSON object per line, for log collectors.
    Json,
}

/// The shape of a key's value, for the environment (lists are comma-separated there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::cli) enum Shape {
    Scalar,
    List,
}

/// One documented key.
#[derive(Debug)]
pub(in crate::cli) struct Key {
    /// Its dotted path (`server.port`).
    pub(in crate::cli) path: &'static str,
    pub(in crate::cli) shape: Shape,
    /// The command-line flags that set it, as shown in help.
    pub(in crate::cli) flags: &'static str,
    pub(in crate::cli) about: &'static str,
    /// The values it may take, when they are few.
    pub(in crate::cli) choices: &'static [&'static str],
}

const fn key(path: &'static str, flags: &'static str, about: &'static str) -> Key {
    Key {
        path,
        shape: Shape::Scalar,
        flags,
        about,
        choices: &[],
    }
}

const fn list(path: &'static str, flags: &'static str, about: &'static str) -> Key {
    Key {
        shape: Shape::List,
        ..key(path, flags, about)
    }
}

const fn choice(
    path: &'static str,
    flags: &'static str,
    about: &'static str,
    choices: &'static [&'static str],
) -> Key {
    Key {
        choices,
        ..key(path, flags, about)
    }
}

/// Every key, in the order `config` prints them.
pub(in crate::cli) const KEYS: &[Key] = &[
    key(
        "server.name",
        "",
        "The server name reported to clients (default: the binary's)",
    ),
    key(
        "server.version",
        "",
        "The server version reported to clients (default: the binary's)",
    ),
    choice(
        "server.transport",
        "`-t` (`serve`); `mcp`, `http`, `unix`",
        "`stdio`, `http`, `sse` (streamable HTTP plus the legacy HTTP+SSE endpoints) or `unix`",
        &["stdio", "http", "sse", "unix"],
    ),
    key(
        "server.host",
        "`--host`, `--addr`",
        "The HTTP address to listen on",
    ),
    key(
        "server.port",
        "`-p`, `--addr`",
        "The HTTP port; 0 picks a free one",
    ),
    key(
        "server.socket",
        "`--path`",
        "The Unix socket's path (mode 0600, removed on exit)",
    ),
    key(
        "server.grace_period_ms",
        "`--grace` (seconds)",
        "On SIGINT/SIGTERM, how long running calls get to finish",
    ),
    key(
        "server.stateless",
        "`--stateless`",
        "HTTP without sessions: every request stands alone",
    ),
    key(
        "server.max_connections",
        "`--max-connections`",
        "HTTP connections open at once; past it the longest-idle one is closed, or a new one answered 503 if all are busy",
    ),
    key(
        "server.timeout_ms",
        "`--request-timeout` (seconds)",
        "The deadline of one HTTP request; its call is cancelled past it",
    ),
    key(
        "server.max_body_bytes",
        "`--max-body-bytes`",
        "The largest HTTP request body (413 past it)",
    ),
    key(
        "server.max_sessions",
        "`--max-sessions`",
        "HTTP sessions (and subscriptions/listen streams) open at once (503 past it)",
    ),
    key(
        "server.max_sessions_per_principal",
        "`--max-sessions-per-principal`",
        "HTTP sessions (and subscriptions/listen streams) one principal may hold (429 past it)",
    ),
    key(
        "server.session_idle_timeout_ms",
        "`--session-idle-timeout` (seconds)",
        "An HTTP session with nothing in progress is closed after this",
    ),
    key(
        "server.stream_timeout_ms",
        "`--stream-timeout` (seconds)",
        "A session's event stream, or a subscriptions/listen stream, ends after this; clients reconnect",
    ),
    key(
        "server.header_read_timeout_ms",
        "`--header-read-timeout` (seconds)",
        "Time an HTTP request head may take to arrive",
    ),
    key(
        "server.write_timeout_ms",
        "`--write-timeout` (seconds)",
        "Time an HTTP answer or stream may wait for its client to take bytes; then its connection is closed",
    ),
    key(
        "server.worker_threads",
        "",
        "Threads that serve: `0` is one on stdio (and a second for calls and reads while others are in flight) and one per core over HTTP and Unix sockets; `1` serves everything from one thread; more is that many workers",
    ),
    key(
        "security.token_file",
        "`--token-file`",
        "Bearer tokens, one `TOKEN PRINCIPAL [GRANT...]` per line (mode 0600); required off loopback",
    ),
    key(
        "security.allow_unauthenticated",
        "`--allow-unauthenticated`",
        "Serve a non-loopback address without tokens",
    ),
    list(
        "security.allowed_hosts",
        "`--allow-host`",
        "Host headers accepted (default: the loopback names)",
    ),
    list(
        "security.allowed_origins",
        "`--allow-origin`",
        "Browser origins accepted (default: pages on a loopback address)",
    ),
    key(
        "security.cors",
        "",
        "Answer CORS (preflights, MCP headers allowed and exposed) to pages of the allowed origins",
    ),
    key(
        "security.cors_allow_credentials",
        "",
        "Let those pages send credentials (cookies, client certificates); bearer tokens need none",
    ),
    key(
        "security.oauth.issuer",
        "",
        "Accept OAuth access tokens (JWT) of this authorization server on HTTP, instead of a token file",
    ),
    key(
        "security.oauth.resource",
        "",
        "This server's MCP endpoint as clients reach it (`https://mcp.example.com/mcp`): the tokens' audience, published at `/.well-known/oauth-protected-resource`",
    ),
    key(
        "security.oauth.audience",
        "",
        "The audience tokens must name, when the issuer uses another than the resource URL",
    ),
    key(
        "security.oauth.jwks_uri",
        "",
        "The issuer's keys (default: found in its metadata)",
    ),
    list(
        "security.oauth.required_scopes",
        "",
        "Scopes every token needs (`403 insufficient_scope` without)",
    ),
    list(
        "security.oauth.scopes",
        "",
        "What each scope gives, `SCOPE GRANT...` like a token-file line: `\"shop:read allow:effect:read\"`",
    ),
    key(
        "security.principal",
        "`--principal`",
        "The principal calls run as, unless a token names one",
    ),
    list(
        "security.grants",
        "`--grant`",
        "Grants every call holds, e.g. `confirm:cancel_order`",
    ),
    key(
        "security.confirm_via_client",
        "`--confirm-via-client`",
        "Ask the client's user to approve calls that need confirmation (stdio)",
    ),
    key(
        "security.rate_limit.requests_per_minute",
        "",
        "HTTP requests one client address may send per minute; past it `429` with `Retry-After` (default: no limit)",
    ),
    key(
        "security.rate_limit.burst_size",
        "",
        "HTTP requests one client address may send at once (default: the minute's requests)",
    ),
    key(
        "resources.root_path",
        "`--resource-root`",
        "The directory served as resources (default: the binary's own documents)",
    ),
    key(
        "logging.level",
        "`-l`",
        "A level (`info`) or filter directives (`warn,shop=debug`)",
    ),
    choice(
        "logging.format",
        "",
        "`full`, `compact`, `pretty` (several lines an event) or `json` (an object a line)",
        &["full", "compact", "pretty", "json"],
    ),
    key(
        "logging.file",
        "",
        "Append the log to this file instead of stderr",
    ),
    key(
        "tool_settings.rate_limit.requests_per_minute",
        "",
        "Calls one principal may make of each tool per minute, unless the tool sets its own `rate_limit`; past it `RATE_LIMITED` (default: no limit)",
    ),
    key(
        "tool_settings.rate_limit.burst_size",
        "",
        "Calls one principal may make of a tool at once (default: the minute's requests)",
    ),
    list(
        "tool_settings.allowed_tools",
        "",
        "What every caller may see and use: tool names, patterns (`orders.*`), `effect:read`, `resource:URI`, `prompt:NAME` (default: all); a token's `allow:` rules narrow it",
    ),
    list(
        "tool_settings.require_confirmation",
        "",
        "Tools that need confirmation (the host's `confirm:TOOL` grant or the client's approval) whatever they declare: names, patterns, `effect:destructive`",
    ),
    key(
        "tool_settings.max_execution_time_ms",
        "",
        "The deadline of a tool that sets no `timeout` (default: the runtime's, 60 s)",
    ),
    key(
        "tool_settings.max_result_bytes",
        "",
        "The largest result a tool, a resource, a prompt or a completion may hand back, in bytes (JSON as sent, bytes as base64); past it `OUTPUT_TOO_LARGE` (default: the runtime's, 8 MiB)",
    ),
    key(
        "store",
        "`--store`",
        "`memory`, an SQLite file, `postgres://...` or `redis://...` (default: a file in the data directory)",
    ),
    key(
        "request_ids.max_per_principal",
        "",
        "Request ids of writes one principal may have kept at once (each for 24 h); past it its writes under new ids get `CAPACITY`, while reads and idempotent tools still run (default: 10,000 in `memory`, 2,000,000 in a file or PostgreSQL, 1,000,000 in Redis)",
    ),
    key(
        "request_ids.max_bytes_per_principal",
        "",
        "Bytes one principal's kept request ids and outcomes may take (default: 16 MiB in `memory`, 2 GiB in a file or PostgreSQL, 1 GiB in Redis)",
    ),
    key(
        "request_ids.max",
        "",
        "Request ids of writes kept across principals (default: 100,000 in `memory`, 10,000,000 in a file or PostgreSQL, 4,000,000 in Redis)",
    ),
    key(
        "request_ids.max_bytes",
        "",
        "Bytes of all kept request ids and outcomes (default: 128 MiB in `memory`, 8 GiB in a file or PostgreSQL, 4 GiB in Redis)",
    ),
];

/// The sections a `CARMY_...` variable must name to be read as configuration.
pub(in crate::cli) const SECTIONS: &[&str] = &[
    "server",
    "security",
    "resources",
    "logging",
    "tool_settings",
    "store",
    "request_ids",
];

/// The documented key at `path`.
pub(in crate::cli) fn find(path: &str) -> Option<&'static Key> {
    KEYS.iter().find(|key| key.path == path)
}
