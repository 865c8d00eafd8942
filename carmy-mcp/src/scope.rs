//! Who a call runs as and what stops it.
//!
//! By default: the server's host context and rmcp's cancellation (`notifications/cancelled`).
//! A transport that knows more about a request attaches a [`RequestScope`] to it: HTTP does,
//! with the context its authenticator decided on and a token cancelled when the client
//! disconnects, the request's deadline passes or the server shuts down.

use carmy_core::Context;
use rmcp::{RoleServer, service::RequestContext};
use tokio_util::sync::CancellationToken;

/// What a transport decided for one request, put in its extensions.
#[derive(Clone, Debug)]
pub(crate) struct RequestScope {
    pub(crate) context: Context,
    pub(crate) cancellation: CancellationToken,
}

impl RequestScope {
    /// The scope a transport attached to `request`, if any. rmcp's HTTP transport hands the
    /// handler the request's `http::request::Parts`, whose extensions carry it.
    fn of(request: &RequestContext<RoleServer>) -> Option<&Self> {
        if let Some(scope) = request.extensions.get::<Self>() {
            return Some(scope);
        }
        #[cfg(feature = "http")]
        if let Some(parts) = request.extensions.get::<http::request::Parts>() {
            return parts.extensions.get::<Self>();
        }
        None
    }
}

/// The trusted context of a request that runs nothing (`tasks/get`, `tasks/cancel`): the one
/// its transport decided on, or the host's.
pub(crate) fn context_of(host: &Context, request: &RequestContext<RoleServer>) -> Context {
    RequestScope::of(request).map_or_else(|| host.clone(), |scope| scope.context.clone())
}

/// The trusted context and the cancellation of one call. Dropping it (when the call has
/// answered) releases the watcher that joins a transport's cancellation to rmcp's.
pub(crate) struct CallScope {
    pub(crate) context: Context,
    pub(crate) cancellation: CancellationToken,
    /// Whether `cancellation` is a token of ours rather than rmcp's.
    owned: bool,
}

impl CallScope {
    pub(crate) fn of(host: &Context, request: &RequestContext<RoleServer>) -> Self {
        let Some(scope) = RequestScope::of(request) else {
            return Self {
                context: host.clone(),
                cancellation: request.ct.clone(),
                owned: false,
            };
        };
        // rmcp's token fires on `notifications/cancelled`, the transport's on disconnect,
        // deadline and shutdown. Either stops the execution.
        let cancellation = request.ct.child_token();
        let (joined, transport) = (cancellation.clone(), scope.cancellation.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = transport.cancelled() => joined.cancel(),
                () = joined.cancelled() => {}
            }
        });
        Self {
            context: scope.context.clone(),
            cancellation,
            owned: true,
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
