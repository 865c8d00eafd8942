//! Who a call runs as and what stops it: the server's host context, or what an HTTP
//! authenticator decided for this request; rmcp's cancellation, joined on HTTP by the client
//! disconnecting, the request deadline and server shutdown.

use carmy_core::Context;
use rmcp::{RoleServer, service::RequestContext};
use tokio_util::sync::CancellationToken;

use crate::McpServer;

/// The trusted context and the cancellation of one `tools/call`. Dropping it (when the call has
/// answered) releases the watcher that joins the HTTP request's cancellation.
pub(crate) struct CallScope {
    pub(crate) context: Context,
    pub(crate) cancellation: CancellationToken,
    /// Whether `cancellation` is a token of ours rather than rmcp's.
    owned: bool,
}

impl CallScope {
    pub(crate) fn of(server: &McpServer, request: &RequestContext<RoleServer>) -> Self {
        #[cfg(feature = "http")]
        if let Some(call) = crate::http::HttpCall::of(request) {
            // rmcp's token fires on `notifications/cancelled`; the HTTP request's on disconnect,
            // deadline and shutdown. Either stops the execution.
            let cancellation = request.ct.child_token();
            let (joined, http) = (cancellation.clone(), call.cancellation.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = http.cancelled() => joined.cancel(),
                    () = joined.cancelled() => {}
                }
            });
            return Self {
                context: call.context.clone(),
                cancellation,
                owned: true,
            };
        }
        Self {
            context: server.context.clone(),
            cancellation: request.ct.clone(),
            owned: false,
        }
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        // The call has answered. Our own token is cancelled to end the watcher above (the
        // execution is over, so nothing else listens); rmcp's is rmcp's to cancel.
        if self.owned {
            self.cancellation.cancel();
        }
    }
}
