//! The transactions of a claim, a finish and a release (see `sql` for the statements and the
//! order their locks are taken in).
//!
//! Most claims and every finish are one statement each, a function of the schema (layout 6)
//! that runs the steps below where the rows are: one round trip and one transaction instead of
//! five or six. A claim the function cannot decide alone (a key to settle first, a share or
//! the totals to make room in) is answered "slow", with nothing changed, and takes the long
//! way in Rust, step by step.
//!
//! A claim runs in one READ COMMITTED transaction:
//! 1. it locks the key's row (`SELECT ... FOR UPDATE`), so every claim of an existing key waits
//!    its turn and sees what the one before it committed; a lease that has run out, or a key
//!    past its retention, is settled there and then, as its terms say;
//! 2. a key that is (now) absent is inserted with `ON CONFLICT DO NOTHING` once the totals
//!    (read without a lock) have room. Two claims of a new key both find it absent in step 1;
//!    the second's insert waits for the first's to commit, then does nothing, and the second
//!    looks the row up again and answers from it. Of any number of claims of a key, in any
//!    number of processes, exactly one inserts it;
//! 3. the insert's trigger counts the key in its principal's share, locking that row until the
//!    commit; the claim then checks the share. When it is over its bounds, its own expired keys
//!    are settled (a bounded batch) and it is checked again; still over, the row is deleted
//!    again (its trigger takes the count back) and the claim fails with `Full`.
//!
//! Bounds. A principal's bounds are exact: its share's row lock is held from the count to the
//! commit by every transaction that adds to it (a claim, a finish), so they add one at a time,
//! each after seeing the others' sums. Only one principal's claims of new keys take turns on
//! that row; claims of existing keys never touch it. The totals are not locked for the check:
//! a lock there would make every claim of every principal take turns on one row. Each claim
//! reads the sum of the slots as committed and adds to its principal's slot, so claims
//! committing at once may each see room for one more: the totals can pass `request_ids.max` by
//! at most the number of claims committing at the same moment (each takes a connection, so at
//! most the sum of the replicas' pool sizes), and `max_bytes` by that many keys' or outcomes'
//! worth.
//! A share is never passed except by the note kept for an outcome that did not fit, as in
//! `MemoryStore`.

use std::time::Duration;

use carmy_core::{
    ExecutionStatus, Fingerprint, IdempotencyKey, Lease, LeaseTerms, Recorded, Release, StoreError,
};
use deadpool_postgres::{GenericClient, Object, Transaction};
use tokio_postgres::{Row, types::ToSql};

use super::{
    PostgresStoreOptions,
    connection::millis,
    error::Failure,
    schema::{FINISHED, HELD, UNCERTAIN},
    sql::Sql,
    sweep::{self, Scope},
};
use crate::outcome;

/// What a claim found, before the store turns a held key into a waiter.
pub(super) enum Seen {
    Acquired(Lease),
    Finished(Recorded),
    Conflict,
    Uncertain(ExecutionStatus),
    /// Held by `token` for `left` more by the server's clock. A token of 0 and no time left:
    /// another claim took the key a moment ago, and claiming again will tell.
    Running {
        token: u128,
        left: Duration,
    },
    /// The totals are full: the caller settles what is due across principals (in a
    /// transaction of its own, which takes its locks in their order) and claims once more.
    Crowded,
}

/// Claims `key`; `room_made`: the caller already swept once for room in the totals.
///
/// The common case is one statement, the schema's `claim` function: a key that is new, or
/// whose row needs nothing settled, with room in the share and the totals. It answers "slow",
/// having changed nothing, when the key must be settled or room made first, and the steps
/// below take the long way, in one transaction of several statements.
pub(super) async fn claim(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    key: &IdempotencyKey,
    fingerprint: Fingerprint,
    terms: LeaseTerms,
    room_made: bool,
) -> Result<Seen, Failure> {
    let (principal, request_id) = (key.principal().as_bytes(), key.request_id().as_bytes());
    let ttl = millis(options.ttl);
    let bytes = count(outcome::key_bytes(key));
    let token = uuid::Uuid::new_v4().as_u128();
    let if_lost = match terms.if_lost {
        Release::Retry => None,
        Release::Uncertain(status) => Some(outcome::status_text(status)?),
    };
    if !room_made {
        let at_once = connection.prepare_cached(&sql.claim).await?;
        let bounds = &options.request_ids;
        let row = connection
            .query_one(
                &at_once,
                &[
                    &principal,
                    &request_id,
                    &&fingerprint.as_bytes()[..],
                    &&token.to_be_bytes()[..],
                    &if_lost,
                    &millis(terms.duration),
                    &bytes,
                    &count(bounds.max),
                    &count(bounds.max_bytes),
                    &count(bounds.max_per_principal),
                    &count(bounds.max_bytes_per_principal),
                ],
            )
            .await?;
        match row.try_get::<_, &str>("kind")? {
            "acquired" => return Ok(Seen::Acquired(Lease::new(key.clone(), token))),
            "seen" => return seen(&row, fingerprint),
            _ => {}
        }
    }
    let transaction = connection.transaction().await?;
    let lookup = transaction.prepare_cached(&sql.lookup).await?;
    let totals = transaction.prepare_cached(&sql.totals).await?;
    let insert = transaction.prepare_cached(&sql.insert).await?;
    let share = transaction.prepare_cached(&sql.share).await?;
    let key_params: [&(dyn ToSql + Sync); 2] = [&principal, &request_id];
    // Sent together: the totals read takes no lock, so its place in the pipeline is free.
    let (mut row, totals) = tokio::try_join!(
        transaction.query_opt(&lookup, &key_params),
        transaction.query_one(&totals, &[]),
    )?;
    // A key that another claim inserts between this one's lookup and insert is looked up
    // again; one that keeps appearing and vanishing (inserted, then released at once) gets a
    // waiter that resolves at once, and the claim that follows tells.
    for _ in 0..3 {
        if row.as_ref().is_some_and(|row| row.get::<_, bool>("due")) {
            // The row is locked: settling it here is settling it once.
            sweep::settle_keys(&transaction, sql, &[principal], &[request_id], ttl).await?;
            row = transaction.query_opt(&lookup, &key_params).await?;
        }
        if let Some(row) = row {
            let seen = seen(&row, fingerprint)?;
            if matches!(seen, Seen::Running { .. }) && !row.get::<_, bool>("watched") {
                // The row is locked, so its holder cannot settle it before this commits: once
                // it does, its end will be announced.
                let watch = transaction.prepare_cached(&sql.watch).await?;
                transaction.execute(&watch, &key_params).await?;
            }
            transaction.commit().await?;
            return Ok(seen);
        }

        let (entries, weight): (i64, i64) = (totals.get(0), totals.get(1));
        if entries >= count(options.request_ids.max)
            || weight.saturating_add(bytes) > count(options.request_ids.max_bytes)
        {
            // Committed, not rolled back: what was settled on the way stays settled.
            transaction.commit().await?;
            if room_made {
                return Err(StoreError::totals_full().into());
            }
            return Ok(Seen::Crowded);
        }

        // The row first: its trigger then locks the share and the slot, in their order. (An
        // insert may wait for another transaction deleting the same key, which holds that row
        // and wants the share; taking the share first would make that a cycle.)
        let inserted = transaction
            .execute(
                &insert,
                &[
                    &principal,
                    &request_id,
                    &&fingerprint.as_bytes()[..],
                    &&token.to_be_bytes()[..],
                    &if_lost,
                    &millis(terms.duration),
                    &bytes,
                ],
            )
            .await?;
        if inserted == 0 {
            // Another claim of the key committed since the lookup: nothing is held but what
            // this claim settled, so the row can be locked and read again.
            row = transaction.query_opt(&lookup, &key_params).await?;
            continue;
        }

        // Counted, and the share locked by the trigger until the commit: the check sees this
        // claim's key and every other committed one, and no other claim of the principal can
        // add to it meanwhile.
        let over = |(held, weight): (i64, i64)| {
            held > count(options.request_ids.max_per_principal)
                || weight > count(options.request_ids.max_bytes_per_principal)
        };
        let read_share = async || -> Result<(i64, i64), Failure> {
            let row = transaction.query_one(&share, &[&principal]).await?;
            Ok((row.get(0), row.get(1)))
        };
        let mut held = read_share().await?;
        if over(held) {
            // Only now is the principal's backlog worth a look: most claims never pay for it.
            sweep::settle_due(&transaction, sql, Scope::Principal(principal), ttl).await?;
            held = read_share().await?;
        }
        if over(held) {
            // Undone by deleting the row (its trigger takes the counts back); what was settled
            // on the way stays settled.
            let forget = transaction.prepare_cached(&sql.forget).await?;
            transaction
                .execute(
                    &forget,
                    &[&principal, &request_id, &&token.to_be_bytes()[..]],
                )
                .await?;
            transaction.commit().await?;
            let (held, weight) = (u64::try_from(held.0 - 1), u64::try_from(held.1 - bytes));
            return Err(StoreError::share_full(
                held.unwrap_or_default(),
                weight.unwrap_or_default(),
                options.ttl,
            )
            .into());
        }
        transaction.commit().await?;
        return Ok(Seen::Acquired(Lease::new(key.clone(), token)));
    }
    transaction.commit().await?;
    Ok(Seen::Running {
        token: 0,
        left: Duration::ZERO,
    })
}

/// What the (locked) row of a key says to a claim with `fingerprint`.
fn seen(row: &Row, fingerprint: Fingerprint) -> Result<Seen, Failure> {
    let kept: &[u8] = row.try_get("fingerprint")?;
    if kept != fingerprint.as_bytes() {
        return Ok(Seen::Conflict);
    }
    let state: i16 = row.try_get("state")?;
    let missing = |what: &str| Failure::Invalid(format!("a kept claim has no {what}"));
    match state {
        HELD => {
            let token: Option<&[u8]> = row.try_get("token")?;
            let token = token
                .and_then(|token| <[u8; 16]>::try_from(token).ok())
                .ok_or_else(|| missing("16-byte lease token"))?;
            let left: i64 = row.try_get("left_ms")?;
            Ok(Seen::Running {
                token: u128::from_be_bytes(token),
                left: Duration::from_millis(u64::try_from(left).unwrap_or(0)),
            })
        }
        FINISHED => {
            let text: Option<&str> = row.try_get("outcome")?;
            Ok(Seen::Finished(outcome::decode(
                text.ok_or_else(|| missing("outcome"))?,
            )?))
        }
        UNCERTAIN => {
            let status: Option<&str> = row.try_get("status")?;
            Ok(Seen::Uncertain(outcome::status_from(
                status.ok_or_else(|| missing("status"))?,
            )?))
        }
        other => Err(Failure::Invalid(format!(
            "a kept claim is in no known state ({other})"
        ))),
    }
}

pub(super) async fn finish(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    lease: &Lease,
    recorded: &Recorded,
) -> Result<(), Failure> {
    // Encoded before the statement: no lock is held while a large outcome is written out.
    let text = outcome::encode(recorded)?;
    keep_outcome(&*connection, sql, options, lease, recorded, text).await
}

/// Locks the claim row of `lease`'s key, the first lock of a transaction that settles it;
/// fails with `LeaseLost` unless `lease` is still its holder.
pub(super) async fn hold(
    transaction: &Transaction<'_>,
    sql: &Sql,
    lease: &Lease,
) -> Result<(), Failure> {
    let key = lease.key();
    let held_by = transaction.prepare_cached(&sql.held_by).await?;
    let held = transaction
        .query_opt(
            &held_by,
            &[
                &key.principal().as_bytes(),
                &key.request_id().as_bytes(),
                &&lease.token().to_be_bytes()[..],
            ],
        )
        .await?;
    if held.is_none() {
        return Err(StoreError::LeaseLost.into());
    }
    Ok(())
}

/// Finishes the key of `lease` in one statement (the schema's `finish` function), in the
/// transaction `client` is in or in one of its own; fails with `LeaseLost` unless `lease` still
/// holds it. `text` (`recorded`, encoded) is kept for replay if it fits the bound of one
/// outcome, its principal's share and the totals; else a note that the call ran.
pub(super) async fn keep_outcome(
    client: &impl GenericClient,
    sql: &Sql,
    options: &PostgresStoreOptions,
    lease: &Lease,
    recorded: &Recorded,
    text: String,
) -> Result<(), Failure> {
    let key = lease.key();
    let size = count(text.len());
    // The call ran: its retries must not run it again, even if its outcome cannot be kept.
    let note = outcome::encode(&outcome::not_kept(recorded, text.len()))?;
    let bounds = &options.request_ids;
    let finish = client.prepare_cached(&sql.finish).await?;
    let held = client
        .query_one(
            &finish,
            &[
                &key.principal().as_bytes(),
                &key.request_id().as_bytes(),
                &&lease.token().to_be_bytes()[..],
                &text,
                &note,
                &size,
                &millis(options.ttl),
                &count(bounds.max_outcome_bytes),
                &count(bounds.max_bytes_per_principal),
                &count(bounds.max_bytes),
            ],
        )
        .await?;
    if !held.try_get::<_, bool>(0)? {
        return Err(StoreError::LeaseLost.into());
    }
    Ok(())
}

/// One statement, so no transaction of its own: it changes the row only while `lease` holds it.
pub(super) async fn release(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    lease: &Lease,
    release: Release,
) -> Result<(), Failure> {
    let key = lease.key();
    let (principal, request_id) = (key.principal().as_bytes(), key.request_id().as_bytes());
    let token = lease.token().to_be_bytes();
    let changed = match release {
        Release::Retry => {
            let forget = connection.prepare_cached(&sql.forget).await?;
            connection
                .execute(&forget, &[&principal, &request_id, &&token[..]])
                .await?
        }
        Release::Uncertain(status) => {
            let keep = connection.prepare_cached(&sql.keep_uncertain).await?;
            connection
                .execute(
                    &keep,
                    &[
                        &principal,
                        &request_id,
                        &&token[..],
                        &outcome::status_text(status)?,
                        &millis(options.ttl),
                    ],
                )
                .await?
        }
    };
    if changed == 0 {
        return Err(StoreError::LeaseLost.into());
    }
    Ok(())
}

/// Whether `token` still holds `key` under a lease that has not run out.
pub(super) async fn still_held(
    connection: &mut Object,
    sql: &Sql,
    key: &IdempotencyKey,
    token: u128,
) -> Result<bool, Failure> {
    let statement = connection.prepare_cached(&sql.still_held).await?;
    let row = connection
        .query_opt(
            &statement,
            &[
                &key.principal().as_bytes(),
                &key.request_id().as_bytes(),
                &&token.to_be_bytes()[..],
            ],
        )
        .await?;
    Ok(row.is_some())
}

pub(super) fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
