//! The connection that listens for settled keys (`LISTEN`), outside the pool, and wakes this
//! process's waiters on them.
//!
//! It is one connection per store, reconnected with a growing pause (up to [`LONGEST_PAUSE`])
//! whenever it drops. Notifications sent while it is down are lost; the waiters cover that gap
//! by polling, and poll more often while it is down ([`Waiters::listening`]).

use std::{future::poll_fn, sync::Arc, time::Duration};

use tokio_postgres::{AsyncMessage, Config, NoTls};

use super::waiters::Waiters;

const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// Listens on `channel` until the task is aborted (when the store is dropped).
pub(super) fn spawn(
    config: Config,
    channel: String,
    waiters: Arc<Waiters>,
    connect_timeout: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut pause = FIRST_PAUSE;
        loop {
            if listen(&config, &channel, &waiters, connect_timeout).await {
                // It listened, then the connection ended: try again soon.
                pause = FIRST_PAUSE;
            }
            waiters.set_listening(false);
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    })
}

/// One connection's life: connect, `LISTEN`, wake the waiters of every tag announced, until the
/// connection ends. Whether it got as far as listening.
async fn listen(
    config: &Config,
    channel: &str,
    waiters: &Waiters,
    connect_timeout: Duration,
) -> bool {
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
    let statement = format!("LISTEN \"{channel}\"");
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
                    waiters.wake(notification.payload());
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
