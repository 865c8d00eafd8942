//! Waiting for a running claim (`Claim::Running`) to be settled.
//!
//! A settle by this process wakes its waiters at once: each claim subscribes to its key's
//! channel *before* its script is sent, so a `finish` of this process that runs after the
//! script saw the key held always finds the subscription and closes it. A settle by another
//! process (another replica, or another store on the same server) is seen by polling the
//! key's holder, every 10 ms at first and then at most every 250 ms, and never past the lease's
//! end, when the waiter resolves and the claim that follows settles the key by its terms.
//!
//! Why polling, not pub/sub: a notification published while the subscriber's connection is
//! down is lost, so a waiter would have to poll anyway to be sure; pub/sub would add a
//! connection per store that must be resubscribed after every reconnect, and on a cluster
//! every publish goes to every node. A poll is one `HGET` of one field, and only a key with a
//! retry waiting on it is polled.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use carmy_core::IdempotencyKey;
use tokio::{sync::watch, time::Instant};

use super::link::Link;
use crate::{claim_wait::Pauses, sync::lock};

/// The first pause of a waiter polling for another process's claim; it doubles up to
/// [`LONGEST_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(10);
const LONGEST_POLL: Duration = Duration::from_millis(250);

/// This process's waiters, by key: dropping a key's sender wakes them.
#[derive(Debug, Default)]
pub(super) struct Waiters {
    senders: Mutex<HashMap<IdempotencyKey, watch::Sender<()>>>,
}

impl Waiters {
    /// Subscribes to `key`'s wake-up, until the returned watch is dropped.
    pub(super) fn watch(self: &Arc<Self>, key: &IdempotencyKey) -> Watch {
        let receiver = lock(&self.senders)
            .entry(key.clone())
            .or_insert_with(|| watch::Sender::new(()))
            .subscribe();
        Watch {
            waiters: Arc::clone(self),
            key: key.clone(),
            receiver: Some(receiver),
        }
    }

    /// Wakes everyone in this process waiting on `key`.
    pub(super) fn wake(&self, key: &IdempotencyKey) {
        lock(&self.senders).remove(key);
    }
}

/// A subscription to a key's wake-up. The last one dropped removes the key's channel, so the
/// map holds only keys someone waits on.
pub(super) struct Watch {
    waiters: Arc<Waiters>,
    key: IdempotencyKey,
    receiver: Option<watch::Receiver<()>>,
}

impl Watch {
    /// Resolves when this process settles the key.
    async fn settled(&mut self) {
        if let Some(receiver) = &mut self.receiver {
            // Only ever an error: the sender is dropped, never sent to.
            let _ = receiver.changed().await;
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        drop(self.receiver.take());
        let mut senders = lock(&self.waiters.senders);
        if senders
            .get(&self.key)
            .is_some_and(|sender| sender.receiver_count() == 0)
        {
            senders.remove(&self.key);
        }
    }
}

/// Resolves once `token` no longer holds the key whose hash is `request`: settled here
/// (`watch` wakes), settled or taken over elsewhere (a poll sees another holder, or none),
/// or at `deadline`, the lease's end, at the latest. A poll that fails ends the wait too; the
/// claim that follows reports the failure.
pub(super) async fn wait(
    link: Arc<Link>,
    request: String,
    token: String,
    deadline: Instant,
    mut watch: Watch,
) {
    let mut pauses = Pauses::new(deadline, FIRST_POLL);
    while pauses.sleep(watch.settled()).await {
        let holder = link
            .run("poll", |mut connection, _| {
                let request = &request;
                async move {
                    redis::cmd("HGET")
                        .arg(request)
                        .arg("token")
                        .query_async::<Option<String>>(&mut connection)
                        .await
                }
            })
            .await;
        match holder {
            Ok(Some(holder)) if holder == token => pauses.double(LONGEST_POLL),
            _ => return,
        }
    }
}
