//! Every documented key: its dotted path, its shape, the flags that set it and what it does.
//!
//! [`KEYS`] lists them in the order `config` prints them; the guide's reference table
//! (docs/06-configuration.md) is checked against it, and [`SECTIONS`] names the sections a
//! `CARMY_...` variable may set.

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
        "Ask the client's user to approve calls that need confirmation (every transport)",
    ),
    key(
        "security.state_keys_file",
        "`--state-keys-file`",
        "The keys that seal 2026-07-28 round trips' states, one `ID KEY` per line, the first sealing; the same on every replica (required on the network with a PostgreSQL or Redis store)",
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
    list(
        "resources.disabled",
        "",
        "Resources not served: URIs, patterns (`shop://policies/*`), templates by their URI template; unknown to listings and reads; re-read on SIGHUP",
    ),
    list(
        "prompts.disabled",
        "",
        "Prompts not served: names, patterns (`draft_*`); unknown to `prompts/list` and `prompts/get`; re-read on SIGHUP",
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
    list(
        "tool_settings.disabled",
        "",
        "Tools not served: names, patterns (`send_*`), `effect:destructive`; unknown to `tools/list` and `tools/call`; re-read on SIGHUP",
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
    "prompts",
    "logging",
    "tool_settings",
    "store",
    "request_ids",
];

/// The documented key at `path`.
pub(in crate::cli) fn find(path: &str) -> Option<&'static Key> {
    KEYS.iter().find(|key| key.path == path)
}
