//! The connection that listens (`LISTEN`), outside the pool: for settled keys, waking this
//! process's waiters on them, and for the other replicas' resource changes, told to this
//! process's followers of the feed.
//!
//! It is one connection per store, reconnected with a growing pause (up to [`LONGEST_PAUSE`])
//! whenever it drops. Notifications sent while it is down are lost: the changes (hints to read
//! again) with them, while the waiters cover that gap
//! by polling, and poll more often while it is down ([`Waiters::listening`]).

use std::{future::poll_fn, sync::Arc, time::Duration};

use tokio_postgres::{AsyncMessage, Config, NoTls};

use super::waiters::Waiters;
use crate::change_feed::Feed;

const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// What the listening connection hears, and who is told.
pub(super) struct Listened {
    /// The channel of settled keys, and the waiters on them.
    pub(super) settled: (String, Arc<Waiters>),
    /// The channel of resource changes, and the feed's followers.
    pub(super) changes: (String, Arc<Feed>),
}

/// Listens until the task is aborted (when the store is dropped).
pub(super) fn spawn(
    config: Config,
    listened: Listened,
    connect_timeout: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut pause = FIRST_PAUSE;
        let waiters = Arc::clone(&listened.settled.1);
        loop {
            if listen(&config, &listened, connect_timeout).await {
                // It listened, then the connection ended: try again soon.
                pause = FIRST_PAUSE;
            }
            waiters.set_listening(false);
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    })
}

/// One connection's life: connect, `LISTEN` on both channels, wake the waiters of every tag
/// announced and tell every change, until the connection ends. Whether it got as far as
/// listening.
async fn listen(config: &Config, listened: &Listened, connect_timeout: Duration) -> bool {
    let (settled, waiters) = (&listened.settled.0, &listened.settled.1);
    let (changed, feed) = (&listened.changes.0, &listened.changes.1);
    let (client, mut connection) =
        match tokio::time::timeout(connect_timeout, config.connect(NoTls)).await {
            Ok(Ok(connected)) => connected,
            Ok(Err(error)) => {
                tracing::debug!(%error, "the idempotency store cannot listen for settled keys");
                return false;
            }
            Err(_) => return false,
        };
    // The connection is driven here, by this loop, while the `LISTEN` goes through it.
    let statement = format!("LISTEN \"{settled}\"; LISTEN \"{changed}\"");
    let listening = client.batch_execute(&statement);
    let mut listening = std::pin::pin!(listening);
    let mut listened = false;
    loop {
        tokio::select! {
            answer = &mut listening, if !listened => {
                if let Err(error) = answer {
                    tracing::debug!(%error, "the idempotency store cannot listen for settled keys");
                    return false;
                }
                listened = true;
                waiters.set_listening(true);
            }
            message = poll_fn(|context| connection.poll_message(context)) => match message {
                Some(Ok(AsyncMessage::Notification(notification))) => {
                    if notification.channel() == changed.as_str() {
                        feed.deliver(notification.payload());
                    } else {
                        waiters.wake(notification.payload());
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    tracing::debug!(%error, "the idempotency store's listening connection failed");
                    return listened;
                }
                None => return listened,
            },
        }
    }
}
