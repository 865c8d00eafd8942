//! A task's row: read and locked, what is due settled on the way (a lost lease ended, a task past
//! its retention forgotten), checked for room in its principal's share, and written back; the
//! tasks' sweep, a batch of due rows at a time.

use std::time::SystemTime;

use carmy_core::{StoreError, TaskEnding, TaskKey, TaskLease, TaskRecord};
use deadpool_postgres::{Object, Transaction};
use tokio_postgres::{Row, types::ToSql};

use super::{
    connection::millis,
    error::Failure,
    options::PostgresStoreOptions,
    sql::Sql,
    sweep::{BATCH, Scope},
};
use crate::task_record;

/// A task's row as a call found it, what was due settled.
pub(super) struct Found {
    pub(super) record: TaskRecord,
    /// The holder's lease token; `None` once the task ended.
    pub(super) token: Option<u128>,
    pub(super) signal: i64,
    pub(super) bytes: i64,
    /// The server's clock when the row was read: the time of the call's changes.
    pub(super) now: SystemTime,
}

/// A running task whose lease ran out, ended lost.
pub(super) struct Lost {
    record: TaskRecord,
    text: String,
    bytes: i64,
    ttl_ms: i64,
}

pub(super) fn key_params(key: &TaskKey) -> (&[u8], &[u8]) {
    (key.principal().as_bytes(), key.id().as_str().as_bytes())
}

pub(super) fn instant(ms: i64) -> SystemTime {
    task_record::at(u64::try_from(ms).unwrap_or(0))
}

pub(super) fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A record's stored text and what it counts for.
pub(super) fn stored(record: &TaskRecord) -> Result<(String, i64), Failure> {
    let text = task_record::encode(record)?;
    let bytes = count(task_record::stored_bytes(&text));
    Ok((text, bytes))
}

fn token_of(row: &Row) -> Result<Option<u128>, Failure> {
    let token: Option<&[u8]> = row.try_get("token")?;
    token
        .map(|token| {
            <[u8; 16]>::try_from(token)
                .map(u128::from_be_bytes)
                .map_err(|_| Failure::Invalid("a kept task has no 16-byte lease token".into()))
        })
        .transpose()
}

pub(super) fn found(row: &Row) -> Result<Found, Failure> {
    Ok(Found {
        record: task_record::decode(row.try_get("record")?)?,
        token: token_of(row)?,
        signal: row.try_get("signal")?,
        bytes: row.try_get("bytes")?,
        now: instant(row.try_get("now_ms")?),
    })
}

/// The running task stored as `text`, its lease run out at `expires_ms`, settled lost at
/// `now_ms`; `None` when its retention, counted from the lease's expiry, has run out as well.
fn settle_lost(text: &str, expires_ms: i64, now_ms: i64) -> Result<Option<Lost>, Failure> {
    let mut record = task_record::decode(text)?;
    let ending = TaskEnding::lost(record.execution_id.clone());
    record.end(ending, instant(now_ms));
    let ttl_ms = millis(record.ttl);
    if expires_ms.saturating_add(ttl_ms) <= now_ms {
        return Ok(None);
    }
    let (text, bytes) = stored(&record)?;
    Ok(Some(Lost {
        record,
        text,
        bytes,
        ttl_ms,
    }))
}

/// Writes what was settled: `lost` ended, `forgotten` (principals and ids) deleted; the
/// caller holds their rows. How many were forgotten.
pub(super) async fn apply_settled(
    transaction: &Transaction<'_>,
    sql: &Sql,
    lost: &[Lost],
    forgotten: (&[&[u8]], &[&[u8]]),
) -> Result<u64, Failure> {
    if !lost.is_empty() {
        let settle = transaction.prepare_cached(&sql.task_settle_lost).await?;
        let (principals, ids): (Vec<&[u8]>, Vec<&[u8]>) =
            lost.iter().map(|lost| key_params(&lost.record.key)).unzip();
        let texts: Vec<&str> = lost.iter().map(|lost| lost.text.as_str()).collect();
        let bytes: Vec<i64> = lost.iter().map(|lost| lost.bytes).collect();
        let ttls: Vec<i64> = lost.iter().map(|lost| lost.ttl_ms).collect();
        transaction
            .execute(&settle, &[&principals, &ids, &texts, &bytes, &ttls])
            .await?;
    }
    if forgotten.0.is_empty() {
        return Ok(0);
    }
    let forget = transaction.prepare_cached(&sql.task_forget).await?;
    Ok(transaction
        .execute(&forget, &[&forgotten.0, &forgotten.1])
        .await?)
}

/// Locks the row of `key` and settles it if it is due; `None` if there is none (or no more).
pub(super) async fn hold(
    transaction: &Transaction<'_>,
    sql: &Sql,
    key: &TaskKey,
) -> Result<Option<Found>, Failure> {
    let (principal, id) = key_params(key);
    let lock = transaction.prepare_cached(&sql.task_lock).await?;
    let Some(row) = transaction.query_opt(&lock, &[&principal, &id]).await? else {
        return Ok(None);
    };
    if !row.try_get::<_, bool>("due")? {
        return found(&row).map(Some);
    }
    // Due, and locked: settling it here is settling it once.
    let now_ms: i64 = row.try_get("now_ms")?;
    let lost = match token_of(&row)? {
        Some(_) => settle_lost(row.try_get("record")?, row.try_get("expires_ms")?, now_ms)?,
        None => None,
    };
    match lost {
        Some(lost) => {
            apply_settled(transaction, sql, std::slice::from_ref(&lost), (&[], &[])).await?;
            Ok(Some(Found {
                record: lost.record,
                token: None,
                signal: row.try_get("signal")?,
                bytes: lost.bytes,
                now: instant(now_ms),
            }))
        }
        None => {
            apply_settled(transaction, sql, &[], (&[principal], &[id])).await?;
            Ok(None)
        }
    }
}

/// The row `lease` holds, locked; `LeaseLost` unless the lease is still its holder, with what
/// was settled on the way committed.
pub(super) async fn held<'a>(
    transaction: Transaction<'a>,
    sql: &Sql,
    lease: &TaskLease,
) -> Result<(Transaction<'a>, Found), Failure> {
    match hold(&transaction, sql, lease.key()).await? {
        Some(found) if found.token == Some(lease.token()) => Ok((transaction, found)),
        _ => {
            transaction.commit().await?;
            Err(StoreError::LeaseLost.into())
        }
    }
}

/// Whether `extra` more bytes fit in the share of `principal` (locked until the commit) and
/// in the totals.
pub(super) async fn room(
    transaction: &Transaction<'_>,
    sql: &Sql,
    options: &PostgresStoreOptions,
    principal: &[u8],
    extra: i64,
) -> Result<bool, Failure> {
    let share = transaction.prepare_cached(&sql.task_share).await?;
    let totals = transaction.prepare_cached(&sql.task_now_and_totals).await?;
    let params: [&(dyn ToSql + Sync); 1] = [&principal];
    let (share, totals) = tokio::try_join!(
        transaction.query_opt(&share, &params),
        transaction.query_one(&totals, &[]),
    )?;
    let kept = share.map_or(Ok(0), |row| row.try_get::<_, i64>(1))?;
    let total: i64 = totals.try_get(2)?;
    Ok(
        kept.saturating_add(extra) <= count(options.tasks.max_bytes_per_principal)
            && total.saturating_add(extra) <= count(options.tasks.max_bytes),
    )
}

/// Writes `record` back into its row, `signals` more writes its holder must act on.
pub(super) async fn write(
    transaction: &Transaction<'_>,
    sql: &Sql,
    text: &str,
    bytes: i64,
    key: &TaskKey,
    signals: i64,
) -> Result<(), Failure> {
    let (principal, id) = key_params(key);
    let write = transaction.prepare_cached(&sql.task_write).await?;
    transaction
        .execute(&write, &[&principal, &id, &text, &bytes, &signals])
        .await?;
    Ok(())
}

/// Locks up to [`BATCH`] due tasks in `scope` and settles them: lost leases ended, tasks past
/// their retention forgotten. How many were due, and how many forgotten.
pub(super) async fn settle_due(
    transaction: &Transaction<'_>,
    sql: &Sql,
    scope: Scope<'_>,
) -> Result<(usize, u64), Failure> {
    let rows = match scope {
        Scope::Principal(principal) => {
            let due = transaction
                .prepare_cached(&sql.tasks_due_of_principal)
                .await?;
            transaction.query(&due, &[&principal, &BATCH]).await?
        }
        Scope::All => {
            let due = transaction.prepare_cached(&sql.tasks_due).await?;
            transaction.query(&due, &[&BATCH]).await?
        }
    };
    if rows.is_empty() {
        return Ok((0, 0));
    }
    let mut principals = Vec::with_capacity(rows.len());
    let mut lost = Vec::new();
    let mut forgotten: (Vec<&[u8]>, Vec<&[u8]>) = (Vec::new(), Vec::new());
    for row in &rows {
        let (principal, id): (&[u8], &[u8]) = (row.try_get(0)?, row.try_get(1)?);
        principals.push(principal);
        let settled = match row.try_get::<_, Option<&str>>(2)? {
            Some(text) => settle_lost(text, row.try_get(3)?, row.try_get(4)?)?,
            None => None,
        };
        match settled {
            Some(settled) => lost.push(settled),
            None => {
                forgotten.0.push(principal);
                forgotten.1.push(id);
            }
        }
    }
    if let Scope::All = scope {
        // Before any row changes (and its trigger locks a share and a slot): in their order.
        let shares = transaction.prepare_cached(&sql.lock_task_shares).await?;
        let slots = transaction.prepare_cached(&sql.lock_task_slots).await?;
        transaction.execute(&shares, &[&principals]).await?;
        transaction.execute(&slots, &[&principals]).await?;
    }
    let forgotten = apply_settled(transaction, sql, &lost, (&forgotten.0, &forgotten.1)).await?;
    Ok((rows.len(), forgotten))
}

/// One batch of the tasks' sweep, in a transaction of its own: how many were due, and how
/// many forgotten.
pub(super) async fn sweep_batch(
    connection: &mut Object,
    sql: &Sql,
) -> Result<(usize, u64), Failure> {
    let transaction = connection.transaction().await?;
    let settled = settle_due(&transaction, sql, Scope::All).await?;
    transaction.commit().await?;
    Ok(settled)
}
