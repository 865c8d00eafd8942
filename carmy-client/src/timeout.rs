//! `--timeout`: how long carmy waits on a server that gives no sign of life.
//!
//! A server that never answers would otherwise keep carmy, and the script that runs it, waiting
//! for ever. But a long call is not a silent one: a progress notification restarts the wait,
//! as the MCP specification allows, so a report that takes ten minutes and says so runs to its
//! end under the default. And while the user answers a question the server asked within a
//! request, carmy is the one being waited on: the clock stops until the answer is given.
//!
//! rmcp's own request timeout can restart on progress, but cannot stop for the user, and its
//! list helpers take no options; so the clock is carmy's, one for the whole run, fed by the
//! handler (src/handler.rs) and read by each request (src/commands/mod.rs).

use std::time::Duration;

use tokio::sync::watch;

/// The clock of the request being waited on.
#[derive(Debug)]
pub(crate) struct Timeout {
    limit: Duration,
    signs: watch::Sender<Signs>,
}

/// What restarts or stops the clock.
#[derive(Debug, Clone, Copy, Default)]
struct Signs {
    /// Progress notifications received so far.
    progress: u64,
    /// Questions being put to the user.
    asking: u32,
}

impl Timeout {
    pub(crate) fn new(limit: Duration) -> Self {
        Self {
            limit,
            signs: watch::Sender::new(Signs::default()),
        }
    }

    pub(crate) fn limit(&self) -> Duration {
        self.limit
    }

    /// The server reported progress: the wait starts again.
    pub(crate) fn progress(&self) {
        self.signs
            .send_modify(|signs| signs.progress = signs.progress.wrapping_add(1));
    }

    /// The user is being asked a question: the clock stops until the turn is dropped, and
    /// starts again from zero.
    pub(crate) fn user_turn(&self) -> UserTurn<'_> {
        self.signs.send_modify(|signs| signs.asking += 1);
        UserTurn(self)
    }

    /// Completes once the server has given no sign of life for the limit, the user's turns
    /// not counted.
    pub(crate) async fn expired(&self) {
        let mut signs = self.signs.subscribe();
        loop {
            let asking = signs.borrow_and_update().asking > 0;
            let changed = if asking {
                Some(signs.changed().await)
            } else {
                tokio::time::timeout(self.limit, signs.changed()).await.ok()
            };
            match changed {
                None => return,
                Some(Ok(())) => {}
                // The sender lives as long as `self`, which this borrows: never.
                Some(Err(_)) => std::future::pending().await,
            }
        }
    }
}

/// A question being put to the user; see [`Timeout::user_turn`].
#[derive(Debug)]
pub(crate) struct UserTurn<'a>(&'a Timeout);

impl Drop for UserTurn<'_> {
    fn drop(&mut self) {
        self.0.signs.send_modify(|signs| signs.asking -= 1);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Timeout;

    #[tokio::test(start_paused = true)]
    async fn silence_expires_and_progress_restarts_the_wait() {
        let timeout = Timeout::new(Duration::from_secs(10));
        let waited = tokio::time::Instant::now();
        timeout.expired().await;
        assert_eq!(waited.elapsed(), Duration::from_secs(10));

        let waited = tokio::time::Instant::now();
        let expired = timeout.expired();
        tokio::pin!(expired);
        for _ in 0..3 {
            tokio::select! {
                () = &mut expired => panic!("expired despite progress"),
                () = tokio::time::sleep(Duration::from_secs(6)) => timeout.progress(),
            }
        }
        expired.await;
        assert_eq!(waited.elapsed(), Duration::from_secs(28));
    }

    #[tokio::test(start_paused = true)]
    async fn the_clock_stops_while_the_user_answers() {
        let timeout = Timeout::new(Duration::from_secs(10));
        let waited = tokio::time::Instant::now();
        let expired = timeout.expired();
        tokio::pin!(expired);
        let turn = timeout.user_turn();
        tokio::select! {
            () = &mut expired => panic!("expired while the user answered"),
            () = tokio::time::sleep(Duration::from_secs(300)) => drop(turn),
        }
        expired.await;
        assert_eq!(waited.elapsed(), Duration::from_secs(310));
    }
}
