//! The store as a [`ChangeFeed`]: a replica's resource changes reach the others with `PUBLISH`
//! on `{prefix}changes`, and theirs come back on a connection of the store's own that
//! `SUBSCRIBE`s to it. The subscribing connection is made again, after a growing pause, whenever
//! it drops; what is published meanwhile is lost (a change is a hint to read again).

use std::{sync::Arc, time::Duration};

use carmy_core::{ChangeFeed, ResourceChange, ResourceChanges, Watching};
use futures_util::StreamExt;
use redis::Client;
use tokio::{sync::mpsc, task::JoinHandle};

use super::{RedisStore, link::Link};
use crate::change_feed::{Feed, next_batch};

const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

impl ChangeFeed for RedisStore {
    fn publish(&self, change: &ResourceChange) {
        self.feed.feed.publish(change);
    }

    fn follow(&self, changes: ResourceChanges) -> Watching {
        self.feed.feed.follow(changes)
    }
}

/// The feed, and the tasks that publish and subscribe: they end with the store.
pub(super) struct Feeding {
    feed: Arc<Feed>,
    tasks: [JoinHandle<()>; 2],
}

impl Feeding {
    /// Publishes through `link` and subscribes with a connection of `client`'s, on `channel`.
    pub(super) fn start(
        link: &Arc<Link>,
        client: Client,
        channel: String,
        connect_timeout: Duration,
    ) -> Self {
        let (feed, queued) = Feed::new();
        let publisher = tokio::spawn(publish(Arc::downgrade(link), channel.clone(), queued));
        let subscriber = tokio::spawn(subscribe(
            client,
            channel,
            Arc::clone(&feed),
            connect_timeout,
        ));
        Self {
            feed,
            tasks: [publisher, subscriber],
        }
    }
}

impl Drop for Feeding {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Publishes what `queued` brings, a batch per round trip (one pipeline), each sent once at
/// most, until the store is dropped.
async fn publish(link: std::sync::Weak<Link>, channel: String, mut queued: mpsc::Receiver<String>) {
    while let Some(batch) = next_batch(&mut queued).await {
        let Some(link) = link.upgrade() else {
            return;
        };
        let published = link
            .run_once("publishing resource changes", |mut connection, _| {
                let mut pipeline = redis::pipe();
                for message in &batch {
                    pipeline.cmd("PUBLISH").arg(&channel).arg(message).ignore();
                }
                async move { pipeline.query_async::<()>(&mut connection).await }
            })
            .await;
        if let Err(error) = published {
            tracing::debug!(%error, "resource changes could not be published");
        }
    }
}

/// Subscribes to `channel` and tells `feed` every message, connecting again whenever the
/// connection drops.
async fn subscribe(client: Client, channel: String, feed: Arc<Feed>, connect_timeout: Duration) {
    let mut pause = FIRST_PAUSE;
    loop {
        match tokio::time::timeout(connect_timeout, client.get_async_pubsub()).await {
            Ok(Ok(mut pubsub)) => match pubsub.subscribe(&channel).await {
                Ok(()) => {
                    pause = FIRST_PAUSE;
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        match message.get_payload::<String>() {
                            Ok(payload) => feed.deliver(&payload),
                            Err(error) => tracing::debug!(%error, "not a resource change"),
                        }
                    }
                    tracing::debug!("the store's subscription to resource changes ended");
                }
                Err(error) => tracing::debug!(%error, "cannot subscribe to resource changes"),
            },
            Ok(Err(error)) => tracing::debug!(%error, "cannot subscribe to resource changes"),
            Err(_) => tracing::debug!("cannot subscribe to resource changes: timed out"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}
