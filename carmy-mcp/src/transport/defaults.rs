//! The defaults of the HTTP server's limits (`HttpServer`, feature `http`). They stand apart
//! from it so that a configuration can show them, and read their keys, in any build.

use std::time::Duration;

/// Default for `HttpServer::max_body_bytes`: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default for `HttpServer::request_timeout`: 120 s, past the runtime's 60 s default tool
/// deadline so that a slow tool reports its own `TIMEOUT` first.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Default for `HttpServer::max_sessions`: 256, half of [`DEFAULT_MAX_CONNECTIONS`], so that
/// sessions' streams never hold every connection.
pub const DEFAULT_MAX_SESSIONS: usize = 256;
/// Default for `HttpServer::max_sessions_per_principal`: 32.
pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: usize = 32;
/// Default for `HttpServer::session_idle_timeout`: 2 minutes. A client listening on its
/// session's stream, or waiting for an answer, is never idle; one doing neither for this long
/// is asked to start a new session (`404`), as MCP requires clients to.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Default for `HttpServer::stream_timeout`: 5 minutes; clients reconnect (rmcp tells them
/// to after 3 s), which shows they are still there.
pub const DEFAULT_STREAM_TIMEOUT: Duration = Duration::from_secs(300);
/// Default for `HttpServer::max_connections`: 512, well under the usual limit of 1,024 open
/// files.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default for `HttpServer::header_read_timeout`: 10 s for a request head from its first
/// byte (an honest one arrives in one packet).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for `HttpServer::max_in_flight`: 8 requests in progress on one legacy SSE session.
/// Its `POST`s are answered before their requests are, so this, not the client's connections,
/// bounds the work one session has the server do at once, and the answers being made for it.
pub const DEFAULT_LEGACY_SSE_MAX_IN_FLIGHT: usize = 8;
/// Default for `HttpServer::write_timeout`: 30 s during which a client takes no bytes of what
/// is written to it.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
