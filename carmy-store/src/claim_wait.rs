//! [`Pauses`]: how every store's waiter paces its polls while another holder has the claim it
//! waits on.

use std::{future::Future, time::Duration};

use tokio::time::Instant;

/// The pauses of a waiter between polls of a claim another holder has: the first one given,
/// each one after a poll that found the claim still held twice as long (up to a longest), none
/// running past `deadline`, the lease's expiry.
pub(crate) struct Pauses {
    deadline: Instant,
    pause: Duration,
}

impl Pauses {
    pub(crate) fn new(deadline: Instant, first: Duration) -> Self {
        Self {
            deadline,
            pause: first,
        }
    }

    /// Sleeps the pause, or until `settled` resolves (the key was settled in this process);
    /// whether to poll now: not once `settled` resolved or `deadline` passed.
    pub(crate) async fn sleep(&self, settled: impl Future) -> bool {
        let nap = self
            .pause
            .min(self.deadline.saturating_duration_since(Instant::now()));
        tokio::select! {
            _ = settled => return false,
            () = tokio::time::sleep(nap) => {}
        }
        Instant::now() < self.deadline
    }

    /// After a poll that found the claim still held: the next pause is twice as long, up to
    /// `longest`.
    pub(crate) fn double(&mut self, longest: Duration) {
        self.pause = (self.pause * 2).min(longest);
    }
}
