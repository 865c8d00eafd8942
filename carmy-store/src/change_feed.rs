//! What the shared stores' [`ChangeFeed`](carmy_core::ChangeFeed)s have in common: a replica's
//! name on its messages, a bounded queue of changes to publish, and the followers its
//! listening connection tells the other replicas' changes to.
//!
//! A change is a hint to read again: it is queued without waiting, dropped when the queue is
//! full (a warning says so, at most once a minute), and lost while the connection that publishes
//! or listens is down, after which it reconnects by itself.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use carmy_core::{ResourceChange, ResourceChanges, Watching};
use tokio::sync::mpsc;

use crate::sync::lock;

/// Changes waiting to be published; past it, new ones are dropped.
const QUEUE: usize = 1024;
/// The most changes published in one round trip.
const BATCH: usize = 64;
/// The least time between two warnings of dropped changes.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// One store's side of the feed: its origin, its queue and its followers.
pub(crate) struct Feed {
    /// Random: names this store's messages, so that its own are left out when they come back.
    origin: u64,
    outbox: mpsc::Sender<String>,
    followers: Mutex<Vec<(u64, ResourceChanges)>>,
    next_follower: AtomicU64,
    warned: Mutex<Option<Instant>>,
}

impl Feed {
    /// A feed, and the receiving end of its queue, for the task that publishes.
    pub(crate) fn new() -> (Arc<Self>, mpsc::Receiver<String>) {
        let (outbox, queued) = mpsc::channel(QUEUE);
        let feed = Arc::new(Self {
            origin: uuid::Uuid::new_v4().as_u64_pair().0,
            outbox,
            followers: Mutex::default(),
            next_follower: AtomicU64::new(0),
            warned: Mutex::default(),
        });
        (feed, queued)
    }

    /// Queues `change` for the other replicas.
    pub(crate) fn publish(&self, change: &ResourceChange) {
        if self
            .outbox
            .try_send(change.to_message(self.origin))
            .is_err()
        {
            let mut warned = lock(&self.warned);
            if warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                *warned = Some(Instant::now());
                tracing::warn!("resource changes were dropped: the feed's queue is full");
            }
        }
    }

    /// Tells `changes` the other replicas' changes until the returned guard is dropped.
    pub(crate) fn follow(self: &Arc<Self>, changes: ResourceChanges) -> Watching {
        let id = self.next_follower.fetch_add(1, Ordering::Relaxed);
        lock(&self.followers).push((id, changes));
        Watching::new(Following {
            feed: Arc::downgrade(self),
            id,
        })
    }

    /// A message the listening connection received: told to every follower, unless it is
    /// this store's own or not a change.
    pub(crate) fn deliver(&self, message: &str) {
        let Some((origin, change)) = ResourceChange::from_message(message) else {
            tracing::debug!(message, "not a resource change; ignored");
            return;
        };
        if origin == self.origin {
            return;
        }
        let followers: Vec<ResourceChanges> = lock(&self.followers)
            .iter()
            .map(|(_, changes)| changes.clone())
            .collect();
        for changes in followers {
            changes.report(&change);
        }
    }
}

/// The changes to publish next: waits for one, then takes those queued behind it (up to
/// [`BATCH`]), each once, so a burst of changes costs one round trip. `None` once the store
/// is gone.
pub(crate) async fn next_batch(queued: &mut mpsc::Receiver<String>) -> Option<Vec<String>> {
    let mut batch = vec![queued.recv().await?];
    while batch.len() < BATCH {
        match queued.try_recv() {
            Ok(message) if batch.contains(&message) => {}
            Ok(message) => batch.push(message),
            Err(_) => break,
        }
    }
    Some(batch)
}

/// A follower's registration, undone when dropped.
struct Following {
    feed: std::sync::Weak<Feed>,
    id: u64,
}

impl Drop for Following {
    fn drop(&mut self) {
        if let Some(feed) = self.feed.upgrade() {
            lock(&feed.followers).retain(|(id, _)| *id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use carmy_core::{Carmy, ChangeSink};

    use super::*;

    #[derive(Default)]
    struct Heard(Mutex<Vec<String>>);
    impl ChangeSink for Heard {
        fn updated(&self, uri: &str) {
            lock(&self.0).push(uri.to_owned());
        }
        fn list_changed(&self) {
            lock(&self.0).push("list_changed".to_owned());
        }
    }

    #[test]
    fn a_store_tells_its_followers_the_others_changes_not_its_own() {
        let runtime = Carmy::new().reports_resource_changes().build().unwrap();
        let heard = Arc::new(Heard::default());
        let _watch = runtime.watch_resources(heard.clone()).unwrap();
        let (feed, mut queued) = Feed::new();
        let (other, mut theirs) = Feed::new();
        let change = ResourceChange::Updated("shop://orders/ord-1".to_owned());
        feed.publish(&change);
        other.publish(&change);
        let (own, others) = (queued.try_recv().unwrap(), theirs.try_recv().unwrap());
        let following = feed.follow(runtime.resource_changes());
        feed.deliver(&own);
        feed.deliver("not a change");
        assert!(lock(&heard.0).is_empty(), "its own, and junk, are left out");
        feed.deliver(&others);
        assert_eq!(*lock(&heard.0), ["shop://orders/ord-1"]);
        drop(following);
        feed.deliver(&others);
        assert_eq!(lock(&heard.0).len(), 1, "nobody follows any more");
    }

    #[tokio::test]
    async fn a_burst_is_published_in_batches_each_change_once() {
        let (feed, mut queued) = Feed::new();
        for n in 0..BATCH + 10 {
            feed.publish(&ResourceChange::Updated(format!("x{}", n % (BATCH + 5))));
        }
        let first = next_batch(&mut queued).await.unwrap();
        assert_eq!(first.len(), BATCH);
        let second = next_batch(&mut queued).await.unwrap();
        assert_eq!(second.len(), 10, "{second:?}");
        drop(feed);
        assert_eq!(next_batch(&mut queued).await, None, "the store is gone");
    }

    #[test]
    fn a_full_queue_drops_changes_without_waiting() {
        let (feed, _queued) = Feed::new();
        for n in 0..QUEUE + 10 {
            feed.publish(&ResourceChange::Updated(format!("x{n}")));
        }
        assert!(lock(&feed.warned).is_some());
    }
}
