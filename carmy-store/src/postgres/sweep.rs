//! Settling what is due: expired leases as their terms say (uncertain for a write, forgotten for
//! a read), settled keys past their retention forgotten; then the same for tasks (a lost lease
//! ends its task `failed`, a task past its retention is forgotten: see `tasks`), in batches of
//! their own, with the same locking.
//!
//! A claim settles its own key when it looks at it, and its principal's backlog when its share
//! is full. The rest is swept in the background by every replica, in batches of [`BATCH`]
//! claims, one transaction each: a backlog of any size never makes one long transaction, never
//! holds many locks for long, and lets claims run between batches. Replicas sweeping at once
//! split the work: each locks its batch with `SKIP LOCKED`, so none waits for another's rows
//! (nor for a row a claim or a finish holds; that one is settled by whoever holds it, or by the
//! next sweep). A batch spans principals, so it locks their shares in principal order and their
//! slots in slot order before it changes a row (see `sql` for why that order).

use std::{sync::Weak, time::Duration};

use deadpool_postgres::{Object, Transaction};

use super::{Shared, error::Failure, sql::Sql};

/// Claims settled per transaction.
pub(super) const BATCH: i64 = 500;

/// Whose due claims to settle.
#[derive(Clone, Copy)]
pub(super) enum Scope<'a> {
    /// One principal's, from a claim that holds its share.
    Principal(&'a [u8]),
    /// Anyone's.
    All,
}

/// Settles those of the given keys that are due; the caller holds their rows. Returns how many
/// were settled.
pub(super) async fn settle_keys(
    transaction: &Transaction<'_>,
    sql: &Sql,
    principals: &[&[u8]],
    request_ids: &[&[u8]],
    ttl_ms: i64,
) -> Result<u64, Failure> {
    let lost = transaction.prepare_cached(&sql.settle_lost).await?;
    let forget = transaction.prepare_cached(&sql.forget_due).await?;
    // In this order: a lost write whose retention has run out as well is forgotten by the
    // second statement, not kept as uncertain by the first.
    let uncertain = transaction
        .execute(&lost, &[&principals, &request_ids, &ttl_ms])
        .await?;
    let forgotten = transaction
        .execute(&forget, &[&principals, &request_ids, &ttl_ms])
        .await?;
    Ok(uncertain + forgotten)
}

/// Locks up to [`BATCH`] due claims in `scope` and settles them. Returns how many were due.
pub(super) async fn settle_due(
    transaction: &Transaction<'_>,
    sql: &Sql,
    scope: Scope<'_>,
    ttl_ms: i64,
) -> Result<usize, Failure> {
    let rows = match scope {
        Scope::Principal(principal) => {
            let due = transaction.prepare_cached(&sql.due_of_principal).await?;
            transaction.query(&due, &[&principal, &BATCH]).await?
        }
        Scope::All => {
            let due = transaction.prepare_cached(&sql.due).await?;
            transaction.query(&due, &[&BATCH]).await?
        }
    };
    if rows.is_empty() {
        return Ok(0);
    }
    let mut principals = Vec::with_capacity(rows.len());
    let mut request_ids = Vec::with_capacity(rows.len());
    for row in &rows {
        principals.push(row.try_get::<_, &[u8]>(0)?);
        request_ids.push(row.try_get::<_, &[u8]>(1)?);
    }
    if let Scope::All = scope {
        // Before any row changes (and its trigger locks a share and a slot): in their order.
        let shares = transaction.prepare_cached(&sql.lock_shares).await?;
        let slots = transaction.prepare_cached(&sql.lock_slots).await?;
        transaction.execute(&shares, &[&principals]).await?;
        transaction.execute(&slots, &[&principals]).await?;
    }
    settle_keys(transaction, sql, &principals, &request_ids, ttl_ms).await?;
    Ok(rows.len())
}

/// One batch of the sweep, in a transaction of its own. Returns how many claims were due.
pub(super) async fn sweep_batch(
    connection: &mut Object,
    sql: &Sql,
    ttl_ms: i64,
) -> Result<usize, Failure> {
    let transaction = connection.transaction().await?;
    let settled = settle_due(&transaction, sql, Scope::All, ttl_ms).await?;
    transaction.commit().await?;
    Ok(settled)
}

/// Sweeps every `interval` until the store is dropped.
pub(super) fn spawn(shared: Weak<Shared>, interval: Duration) -> tokio::task::JoinHandle<()> {
    let interval = interval.max(Duration::from_millis(10));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            if let Err(error) = shared.sweep().await {
                tracing::warn!(%error, "the idempotency store could not sweep expired keys");
            }
            shared.waiters.prune();
            shared.holders.prune();
        }
    })
}
