//! Ctrl-C, listened to once for the whole run.
//!
//! `tokio::signal::ctrl_c()` only sees signals that arrive while its future exists; a loop that
//! makes a new one per turn (`subscribe`) would let a Ctrl-C between two turns go unnoticed,
//! and with tokio's handler installed the process would not die of it either. One listener
//! started before anything else remembers the signal for every later wait.

use tokio::sync::watch;

#[derive(Debug, Clone)]
pub(crate) struct Interrupt(watch::Receiver<bool>);

impl Interrupt {
    /// Starts listening (on the current tokio runtime).
    pub(crate) fn listen() -> Self {
        let (sender, receiver) = watch::channel(false);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = sender.send(true);
            }
            // Held until nobody waits, so that a failed listener reads as "never", not as
            // an interrupt.
            sender.closed().await;
        });
        Self(receiver)
    }

    /// Returns once Ctrl-C has been pressed (at once if it already was).
    pub(crate) async fn wait(&self) {
        let mut receiver = self.0.clone();
        if receiver.wait_for(|interrupted| *interrupted).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
