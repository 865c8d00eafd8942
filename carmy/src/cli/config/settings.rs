//! What a configuration says: each section's keys, their types and their defaults.
//!
//! Sections and keys follow the mcp.rs layout where Carmy has the feature (`server`,
//! `resources`, `security`, `logging`), plus Carmy's own (`store`, the host context, the HTTP
//! limits). Durations are in milliseconds, as `timeout_ms` is there. [`KEYS`](super::keys::KEYS)
//! documents every key, in the order `config` prints them; the guide's reference table (docs/06-configuration.md) is checked against it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The whole configuration of a serving command line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct Settings {
    pub(in crate::cli) server: Server,
    pub(in crate::cli) security: Security,
    pub(in crate::cli) resources: Resources,
    pub(in crate::cli) prompts: Prompts,
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
    /// The keys sealing 2026-07-28 round trips' states, one `ID KEY` per line; shared by
    /// replicas.
    pub(in crate::cli) state_keys_file: Option<PathBuf>,
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
            state_keys_file: None,
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
    /// Tool rules (`send_receipt`, `send_*`, `effect:destructive`) whose tools are not served;
    /// re-read on SIGHUP.
    pub(in crate::cli) disabled: Vec<String>,
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
    /// URIs and URI patterns (`shop://policies/*`) not served; re-read on SIGHUP.
    pub(in crate::cli) disabled: Vec<String>,
}

/// `[prompts]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(in crate::cli) struct Prompts {
    /// Prompt names and patterns (`draft_*`) not served; re-read on SIGHUP.
    pub(in crate::cli) disabled: Vec<String>,
}

impl Settings {
    /// `tool_settings.disabled`, `resources.disabled` and `prompts.disabled`: each key, its
    /// rules, and the prefix that spells them as [`Disabled`](carmy_core::Disabled) rules of
    /// their kind.
    pub(in crate::cli) fn disabled_lists(&self) -> [(&'static str, &[String], &'static str); 3] {
        [
            ("tool_settings.disabled", &self.tool_settings.disabled, ""),
            ("resources.disabled", &self.resources.disabled, "resource:"),
            ("prompts.disabled", &self.prompts.disabled, "prompt:"),
        ]
    }

    /// What the catalog leaves out (its rules are checked by `validate`).
    pub(in crate::cli) fn disabled(&self) -> carmy_core::Disabled {
        let rules = self
            .disabled_lists()
            .into_iter()
            .flat_map(|(_, rules, kind)| rules.iter().map(move |rule| format!("{kind}{rule}")));
        carmy_core::Disabled::parse(rules).unwrap_or_default()
    }
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
