//! What one session's client chose: its log level and the resources it follows. Fresh for
//! each session (`McpServer::for_session`); nothing in it outlives the session.
// MCP's logging types are marked deprecated in rmcp (see `crate::logging`).
#![allow(deprecated)]

use std::sync::Mutex;

use rmcp::model::LoggingLevel;

use crate::{subscriptions::Subscriptions, sync::lock};

/// What one session's client chose.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    /// The least severe log level it wants (`logging/setLevel`); nothing until it says.
    log_level: Mutex<Option<LoggingLevel>>,
    /// The resources it follows; dropped with the session, which stops telling it.
    pub(crate) subscriptions: Subscriptions,
}

impl SessionState {
    /// The least severe level it wants its events at, once it said.
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        *lock(&self.log_level)
    }

    /// `logging/setLevel`.
    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *lock(&self.log_level) = Some(level);
    }
}
