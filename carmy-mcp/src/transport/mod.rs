//! Transports: how messages reach the wire. They know nothing of Carmy's runtime; any rmcp
//! transport serves an [`McpServer`](crate::McpServer), and these add the guards a byte stream
//! or a network needs. The line transport (`line/`) frames one byte stream; Unix domain sockets
//! (`unix.rs`) serve it to many clients at once. Streamable HTTP (`http/`, behind the `http`
//! feature) keeps beside it the legacy HTTP+SSE transport (`http/sse/`), its authentication
//! (`http/auth.rs`) and OAuth (`http/oauth/`, behind the `oauth` feature). The defaults of the
//! network limits (`defaults.rs`, in every build) and the graceful shutdown the network
//! transports share (`shutdown.rs`) sit beside them.

mod defaults;
#[cfg(feature = "http")]
mod http;
pub(crate) mod line;
mod shutdown;
#[cfg(unix)]
mod unix;

pub use line::{
    CallThread, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_OUTBOX_BYTES,
    LineTransport,
};

pub use defaults::{
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
    DEFAULT_REQUEST_TIMEOUT, DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_STREAM_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
};
#[cfg(feature = "http")]
pub use http::{
    Authenticator, BearerTokens, HEALTH_PATH, HttpError, HttpServer, LOOPBACK_ORIGINS, MCP_PATH,
    MESSAGES_PATH, MIN_TOKEN_LEN, SSE_PATH, TokenFileError, Unauthorized,
};
#[cfg(feature = "oauth")]
pub use http::{DEFAULT_KEYS_MAX_AGE, OAuth, OAuthError};
pub use shutdown::{DEFAULT_GRACE_PERIOD, signal as shutdown_signal};
#[cfg(unix)]
pub use unix::UnixSocket;
