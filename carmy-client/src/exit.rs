//! How a run ends: the exit status scripts test, and the one line on stderr that says why.
//!
//! The statuses are a contract (`carmy client --help` states them):
//!
//! | status | meaning |
//! |---|---|
//! | 0 | the request succeeded |
//! | 1 | the server reported an error: a JSON-RPC error, or a tool result with `isError` |
//! | 2 | bad usage (clap's own status for its errors, reused for ours) |
//! | 3 | the server could not be reached or initialized, or the connection was lost |
//! | 4 | the server was silent past `--timeout` (opening the session, or during a request, which was cancelled) |
//! | 130 | interrupted by Ctrl-C, after the running request was cancelled (128 + SIGINT, as a shell reports it) |

use std::{fmt, process::ExitCode};

use rmcp::service::{ClientInitializeError, ServiceError};

/// Why a run did not succeed; its status is [`Failure::status`].
#[derive(Debug)]
pub(crate) enum Failure {
    /// The server answered with an error. The message is complete: code, message and data, or
    /// which tool reported an error (its result is on stdout).
    Server(String),
    /// The command line asks for something that cannot be done.
    Usage(String),
    /// No session: the server could not be started, reached or initialized, or it went away.
    Connect(String),
    /// The server gave no sign of life within `--timeout`; the message says while doing what.
    Timeout(String),
    /// Ctrl-C: what was running has been cancelled.
    Interrupted,
    /// The output could not be written (a full disk, a file `-o` cannot create).
    Output(String),
}

impl Failure {
    pub(crate) fn status(&self) -> ExitCode {
        ExitCode::from(match self {
            Self::Server(_) | Self::Output(_) => 1,
            Self::Usage(_) => 2,
            Self::Connect(_) => 3,
            Self::Timeout(_) => 4,
            Self::Interrupted => 130,
        })
    }

    /// A failed request: a JSON-RPC error is the server's answer (1); a closed transport means
    /// the conversation itself broke (3).
    pub(crate) fn from_service(error: ServiceError) -> Self {
        match error {
            ServiceError::McpError(error) => {
                // The message is one line (`main` escapes the rest of what is shown).
                let mut message = format!(
                    "the server answered {}: {}",
                    error.code.0,
                    crate::escape::field(&error.message)
                );
                if let Some(data) = error.data.filter(|data| !data.is_null()) {
                    message.push_str("\ndata: ");
                    message.push_str(&crate::escape::pretty(&data));
                }
                Self::Server(message)
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                Self::Connect(format!("the connection to the server was lost ({error})"))
            }
            ServiceError::Timeout { .. } => Self::Timeout(format!(
                "no answer in time ({error}); the request was cancelled"
            )),
            other => Self::Server(other.to_string()),
        }
    }

    pub(crate) fn from_initialize(error: ClientInitializeError) -> Self {
        Self::Connect(format!("could not initialize a session: {error}"))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Server(message)
            | Self::Usage(message)
            | Self::Connect(message)
            | Self::Timeout(message)
            | Self::Output(message) => f.write_str(message),
            Self::Interrupted => {
                f.write_str("interrupted (Ctrl-C); the running request was cancelled")
            }
        }
    }
}

/// What a command returns.
pub(crate) type Outcome = Result<(), Failure>;
