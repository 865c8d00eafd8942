//! The store as a [`ChangeFeed`]: a replica's resource changes reach the others with `NOTIFY`
//! on the schema's changes channel, and theirs come back through the listening connection
//! (`listener.rs`). One task publishes the queued changes, a burst of them with one statement
//! on a pooled connection (`pg_notify` over an array); PostgreSQL delivers each notification to
//! every listening session once the statement commits.

use std::sync::Arc;

use carmy_core::{ChangeFeed, ResourceChange, ResourceChanges, Watching};
use deadpool_postgres::Object;
use tokio::{sync::mpsc, task::JoinHandle};

use super::{PostgresStore, Shared, connection::Database, error::Failure};
use crate::change_feed::next_batch;

impl ChangeFeed for PostgresStore {
    fn publish(&self, change: &ResourceChange) {
        self.shared.feed.publish(change);
    }

    fn follow(&self, changes: ResourceChanges) -> Watching {
        self.shared.feed.follow(changes)
    }
}

/// Publishes what `queued` brings on `channel`, a batch per round trip, until the store is
/// dropped.
pub(super) fn spawn(
    shared: std::sync::Weak<Shared>,
    channel: String,
    mut queued: mpsc::Receiver<String>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(batch) = next_batch(&mut queued).await {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            if let Err(failure) = notify(&shared, &channel, &batch).await {
                tracing::debug!(%failure, "resource changes could not be published");
            }
        }
    })
}

async fn notify(shared: &Arc<Shared>, channel: &str, batch: &[String]) -> Result<(), Failure> {
    on_connection!(&shared.db, "publishing resource changes", |connection| {
        send(&mut connection, channel, batch)
    })
}

/// One statement for the batch: PostgreSQL delivers each notification when it commits.
async fn send(connection: &mut Object, channel: &str, batch: &[String]) -> Result<(), Failure> {
    let statement = connection
        .prepare_cached("SELECT pg_notify($1, message) FROM unnest($2::text[]) AS message")
        .await?;
    connection.execute(&statement, &[&channel, &batch]).await?;
    Ok(())
}
