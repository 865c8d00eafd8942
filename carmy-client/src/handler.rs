//! The client side of the conversation: what carmy does with what the server sends unasked
//! (log messages, progress, resource updates, questions).

// MCP logging is deprecated by SEP-2577, but 2025-11-25 servers (the shop among them) still send
// `notifications/message`, and showing them is what this client is for.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::{
    ClientHandler,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
        ErrorData, FormElicitationCapability, Implementation, LoggingMessageNotificationParam,
        ProgressNotificationParam, ProtocolVersion, ResourceUpdatedNotificationParam,
    },
    service::{NotificationContext, RequestContext, RoleClient},
};
use tokio::sync::mpsc;

use crate::{elicit, escape, progress::Stderr, timeout::Timeout};

#[derive(Debug, Clone)]
pub(crate) struct Handler {
    stderr: Arc<Stderr>,
    /// Progress restarts it; a question to the user stops it.
    timeout: Arc<Timeout>,
    /// Where `notifications/resources/updated` go (2025-11-25's `resources/subscribe`).
    updates: mpsc::UnboundedSender<String>,
    /// The revision `initialize` offers.
    legacy_version: ProtocolVersion,
}

impl Handler {
    pub(crate) fn new(
        stderr: Arc<Stderr>,
        timeout: Arc<Timeout>,
        updates: mpsc::UnboundedSender<String>,
        legacy_version: ProtocolVersion,
    ) -> Self {
        Self {
            stderr,
            timeout,
            updates,
            legacy_version,
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Elicitation is declared so that servers ask rather than refuse outright; without a
        // terminal the answer is a clean decline (src/elicit.rs).
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        let mut config = ClientConfig::new(
            capabilities,
            Implementation::new("carmy", env!("CARGO_PKG_VERSION")),
        );
        config.protocol_version = self.legacy_version.clone();
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.stderr.finish();
        let _turn = self.timeout.user_turn();
        Ok(elicit::answer(request).await)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.timeout.progress();
        self.stderr.progress(&params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.stderr.line(&log_line(&params));
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Nobody listens unless `subscribe` runs: the send then fails, harmlessly.
        let _ = self.updates.send(params.uri);
    }
}

/// `[level] logger: message`, the data printed as text when it is a string, as JSON otherwise;
/// one notification, one line.
fn log_line(params: &LoggingMessageNotificationParam) -> String {
    let level = serde_json::to_value(params.level)
        .ok()
        .and_then(|level| level.as_str().map(str::to_owned))
        .unwrap_or_default();
    let data = match &params.data {
        serde_json::Value::String(text) => escape::field(text).into_owned(),
        other => crate::out::compact(other),
    };
    match &params.logger {
        Some(logger) => format!("[{level}] {}: {data}", escape::field(logger)),
        None => format!("[{level}] {data}"),
    }
}
