//! Graceful shutdown, shared by the network transports: the signal, and letting running calls
//! finish before cancelling them.

use std::time::Duration;

use carmy_core::Runtime;
use tokio::time::Instant;

/// How long running calls get to finish on shutdown before they are cancelled, by default: 10 s.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(10);

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM: what `HttpServer::serve` and
/// [`UnixSocket::serve`](crate::UnixSocket::serve) wait for to shut down.
pub async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
                return;
            }
            Err(error) => tracing::warn!(%error, "cannot listen for SIGTERM; only SIGINT stops"),
        }
    }
    if let Err(error) = tokio::signal::ctrl_c().await {
        tracing::warn!(%error, "cannot listen for SIGINT; serving until killed");
        std::future::pending::<()>().await;
    }
}

/// How often the drain looks at the running executions.
const POLL: Duration = Duration::from_millis(20);
/// How long cancelled executions get to record their status.
const AFTER_CANCEL: Duration = Duration::from_secs(2);

/// Waits until no execution runs, or `grace` has passed; then `cancel`s the rest and waits a
/// little for them to stop.
pub(crate) async fn drain(runtime: &Runtime, grace: Duration, cancel: impl FnOnce()) {
    let deadline = Instant::now() + grace;
    while runtime.running_executions() > 0 {
        if Instant::now() >= deadline {
            tracing::warn!(
                running = runtime.running_executions(),
                "grace period over: cancelling the calls still running"
            );
            cancel();
            let deadline = Instant::now() + AFTER_CANCEL;
            while runtime.running_executions() > 0 && Instant::now() < deadline {
                tokio::time::sleep(POLL).await;
            }
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}
