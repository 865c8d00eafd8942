//! Network transports: many clients at once. Streamable HTTP (`http/`, behind the `http`
//! feature, with the legacy HTTP+SSE transport beside it) with its authentication (`auth.rs`, and OAuth in `oauth/` behind the `oauth` feature)
//! and the defaults of its limits (`defaults.rs`, in every build), Unix domain sockets
//! (`unix.rs`), and the graceful shutdown both share (`shutdown.rs`). Each takes an [`McpServer`](crate::McpServer).

#[cfg(feature = "http")]
mod auth;
mod defaults;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "oauth")]
mod oauth;
mod shutdown;
#[cfg(unix)]
mod unix;

#[cfg(feature = "http")]
pub use auth::{Authenticator, BearerTokens, MIN_TOKEN_LEN, TokenFileError, Unauthorized};
pub use defaults::{
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
    DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_STREAM_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
};
#[cfg(feature = "http")]
pub use http::{
    HEALTH_PATH, HttpError, HttpServer, LOOPBACK_ORIGINS, MCP_PATH, MESSAGES_PATH, SSE_PATH,
};
#[cfg(feature = "oauth")]
pub use oauth::{DEFAULT_KEYS_MAX_AGE, OAuth, OAuthError};
pub use shutdown::{DEFAULT_GRACE_PERIOD, signal as shutdown_signal};
#[cfg(unix)]
pub use unix::UnixSocket;
