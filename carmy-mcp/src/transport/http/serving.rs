//! Serving an [`HttpServer`] on a listener until a signal, then shutting down gracefully: new
//! connections refused at once, running calls given the grace period, then open sessions and
//! streams closed.

use std::{future::Future, net::SocketAddr, sync::atomic::Ordering, time::Duration};

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{
    HttpServer, connections,
    router::{Control, overflow_router},
};
use crate::transport::shutdown;

impl HttpServer {
    /// Serves on `listener` until SIGINT or SIGTERM, then shuts down gracefully.
    pub async fn serve(self, listener: TcpListener) -> Result<(), HttpError> {
        self.serve_with_shutdown(listener, shutdown::signal()).await
    }

    /// Serves on `listener` until `signal` completes, then shuts down gracefully: new
    /// connections are refused at once, running calls get the [grace
    /// period](Self::grace_period) to finish and are cancelled past it, then open sessions and
    /// streams are closed.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), HttpError> {
        let addr = listener.local_addr().map_err(HttpError::Io)?;
        if self.authenticator.is_none() && !addr.ip().is_loopback() && !self.allow_unauthenticated {
            return Err(HttpError::Unauthenticated { addr });
        }
        let runtime = self.server.runtime().clone();
        let grace = self.grace_period;
        let limits = self.connections;
        let (router, control) = self.build(Control::new());
        let overflow = overflow_router(limits.max_connections, control.draining.clone());
        let stop_accepting = CancellationToken::new();
        let serving =
            connections::serve(listener, router, overflow, limits, stop_accepting.clone());
        let mut serving = tokio::spawn(serving);
        tokio::select! {
            stopped = &mut serving => return finished(stopped),
            () = signal => {}
        }
        tracing::info!("shutting down: refusing new connections, letting running calls finish");
        control.draining.store(true, Ordering::Relaxed);
        stop_accepting.cancel();
        shutdown::drain(&runtime, grace, || control.calls.cancel()).await;
        // Answers of the calls that just ended are on their way; then close what is still open
        // (sessions, their standalone streams).
        if let Ok(stopped) = tokio::time::timeout(FLUSH, &mut serving).await {
            return finished(stopped);
        }
        control.sessions.cancel();
        match tokio::time::timeout(CLOSE, &mut serving).await {
            Ok(stopped) => finished(stopped),
            Err(_) => {
                tracing::warn!("connections still open after shutdown; dropping them");
                serving.abort();
                Ok(())
            }
        }
    }
}

/// How long answers get to reach their clients once the calls behind them have ended.
const FLUSH: Duration = Duration::from_millis(500);
/// How long closed sessions get to wind down before their connections are dropped.
const CLOSE: Duration = Duration::from_secs(5);

fn finished(stopped: Result<std::io::Result<()>, tokio::task::JoinError>) -> Result<(), HttpError> {
    match stopped {
        Ok(result) => result.map_err(HttpError::Io),
        Err(error) => Err(HttpError::Task(error)),
    }
}

/// Why HTTP serving stopped or never started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// Binding or accepting failed.
    #[error("HTTP server I/O: {0}")]
    Io(#[source] std::io::Error),
    /// A non-loopback address without an authenticator, and unauthenticated serving not allowed.
    #[error(
        "refusing to serve {addr} without authentication: anyone who can reach it could call the tools; configure bearer tokens, or allow unauthenticated access explicitly"
    )]
    Unauthenticated {
        /// The address bound.
        addr: SocketAddr,
    },
    /// The server's task failed.
    #[error("the HTTP server failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}
