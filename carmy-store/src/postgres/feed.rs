//! The store as a [`ChangeFeed`]: a replica's resource changes reach the others with `NOTIFY`
//! on the schema's changes channel, and theirs come back through the listening connection
//! (`listener.rs`). One task publishes the queued changes, each with
//! `SELECT pg_notify(channel, message)` on a pooled connection; PostgreSQL delivers a
//! notification to every listening session once the statement commits.

use std::sync::Arc;

use carmy_core::{ChangeFeed, ResourceChange, ResourceChanges, Watching};
use deadpool_postgres::Object;
use tokio::{sync::mpsc, task::JoinHandle};

use super::{PostgresStore, Shared, connection::Database, error::Failure};

impl ChangeFeed for PostgresStore {
    fn publish(&self, change: &ResourceChange) {
        self.shared.feed.publish(change);
    }

    fn follow(&self, changes: ResourceChanges) -> Watching {
        self.shared.feed.follow(changes)
    }
}

/// Publishes what `queued` brings on `channel`, until the store is dropped.
pub(super) fn spawn(
    shared: std::sync::Weak<Shared>,
    channel: String,
    mut queued: mpsc::Receiver<String>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(message) = queued.recv().await {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            if let Err(failure) = notify(&shared, &channel, &message).await {
                tracing::debug!(%failure, "a resource change could not be published");
            }
        }
    })
}

async fn notify(shared: &Arc<Shared>, channel: &str, message: &str) -> Result<(), Failure> {
    on_connection!(&shared.db, "publishing a resource change", |connection| {
        send(&mut connection, channel, message)
    })
}

async fn send(connection: &mut Object, channel: &str, message: &str) -> Result<(), Failure> {
    let statement = connection
        .prepare_cached("SELECT pg_notify($1, $2)")
        .await?;
    connection
        .execute(&statement, &[&channel, &message])
        .await?;
    Ok(())
}
