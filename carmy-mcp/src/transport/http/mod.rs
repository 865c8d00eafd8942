//! Streamable HTTP: rmcp's service behind authentication, Host and Origin checks, a body limit,
//! a per-request deadline, disconnect cancellation, bounded sessions bound to their principals,
//! bounded connections with a deadline for each request head, a health endpoint and graceful
//! shutdown. Optionally, beside it, the legacy HTTP+SSE transport (`sse/`), behind the same
//! protections. Its authentication (`auth.rs`, bearer tokens and the `Authenticator` trait) and
//! OAuth resource-server support (`oauth/`, behind the `oauth` feature) live here too.
//!
//! `options.rs` is the builder ([`HttpServer`] and its defaults), `router.rs` the router it
//! becomes, `serving.rs` serving it until shutdown; `guard.rs` what each request goes through
//! before rmcp, `body.rs` the reading of its body, `sessions.rs` the sessions, `connections/`
//! the accepting of connections, `refusal.rs` the answers given before rmcp, `service.rs`
//! rmcp's service as every request shares it. rmcp itself checks `Host` and `Origin`, the
//! protocol revision and the SEP-2243 headers of every request it is handed.

mod auth;
mod body;
mod checks;
mod connections;
mod cors;
mod guard;
#[cfg(feature = "oauth")]
mod oauth;
mod options;
mod rate;
mod refusal;
mod router;
mod service;
mod serving;
mod sessions;
mod sse;

pub use self::auth::{Authenticator, BearerTokens, MIN_TOKEN_LEN, TokenFileError, Unauthorized};
#[cfg(feature = "oauth")]
pub use self::oauth::{DEFAULT_KEYS_MAX_AGE, OAuth, OAuthError};
pub use self::options::HttpServer;
pub use self::serving::HttpError;
pub use self::sse::{MESSAGES_PATH, SSE_PATH};

/// The path MCP is served on.
pub const MCP_PATH: &str = "/mcp";
/// The health endpoint: `200 {"status":"ok"}`, or `503` once shutting down. No authentication.
pub const HEALTH_PATH: &str = "/health";

/// The browser origins [`HttpServer`] accepts by default: pages served from a loopback address,
/// on any port. A page there runs on the same machine as the server, as local browser-based
/// clients do; a page of any other origin (the DNS-rebinding and cross-site attacks) is refused.
pub const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];
