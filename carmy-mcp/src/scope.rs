//! Who a call runs as and what stops it.
//!
//! By default: the server's host context and rmcp's cancellation (`notifications/cancelled`).
//! A transport that knows more about a request attaches a [`RequestScope`] to it: HTTP does,
//! with the context its authenticator decided on and a token cancelled when the client
//! disconnects, the request's deadline passes or the server shuts down.

use std::pin::Pin;

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

/// The trusted context and the cancellation of one call, whose work runs through
/// [`run`](Self::run): that is where the transport's cancellation reaches it.
pub(crate) struct CallScope {
    pub(crate) context: Context,
    pub(crate) cancellation: CancellationToken,
    /// The transport's cancellation, joined to rmcp's by [`run`](Self::run).
    transport: Option<CancellationToken>,
}

impl CallScope {
    pub(crate) fn of(host: &Context, request: &RequestContext<RoleServer>) -> Self {
        let Some(scope) = RequestScope::of(request) else {
            return Self {
                context: host.clone(),
                cancellation: request.ct.clone(),
                transport: None,
            };
        };
        // rmcp's token fires on `notifications/cancelled`, the transport's on disconnect,
        // deadline and shutdown. Either stops the execution: rmcp's as the parent of the
        // call's token, the transport's through `run`.
        Self {
            context: scope.context.clone(),
            cancellation: request.ct.child_token(),
            transport: Some(scope.cancellation.clone()),
        }
    }

    /// Runs `work`, the call under this scope's token, to its end. When the transport's
    /// cancellation fires first, the call's token is cancelled and the work winds down as a
    /// cancelled call does. The join lives in the call's own future: a task watching the
    /// transport would cost every call a spawn and a wake-up on another thread. The work is
    /// pinned by the caller: taken by value, it would be stored twice in this future (as the
    /// argument and as the pinned local), and copied in and out of each.
    pub(crate) async fn run<F: Future>(&self, mut work: Pin<&mut F>) -> F::Output {
        let Some(transport) = &self.transport else {
            return work.await;
        };
        if transport.is_cancelled() {
            self.cancellation.cancel();
            return work.await;
        }
        tokio::select! {
            biased;
            output = work.as_mut() => output,
            () = transport.cancelled() => {
                self.cancellation.cancel();
                work.await
            }
        }
    }
}
