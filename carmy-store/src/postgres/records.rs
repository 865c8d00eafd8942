//! The application's records (`carmy_core::records`): reads, listings, and the commit that
//! checks a run's reads, applies its writes and records its outcome in one transaction.
//!
//! # Isolation: a lock per collection, taken before anything is checked
//!
//! A commit runs at READ COMMITTED, like the claims, and serializes with every other commit
//! by locking: before it checks a version, it holds the row of each collection it touches in
//! `collections`, exclusively (`FOR UPDATE`) for a collection it writes into, shared
//! (`FOR SHARE`) for one it only read from or listed. Every commit that writes into a
//! collection holds that row until it commits, so once a commit holds it, nothing in the
//! collection changes until it commits: each statement after the lock (READ COMMITTED takes a
//! new snapshot per statement) sees every commit before it, and no commit after it can slip
//! between its check and its writes. That is two-phase locking, so commits are serializable.
//!
//! A lock per collection rather than per record is what makes an absent record safe: a run
//! that read `users/ada` as absent must conflict with a commit that inserts it meanwhile, and
//! an absent record has no row to lock, but its collection has one. A collection no commit has
//! touched yet gets its row (version 0) first, `INSERT ... ON CONFLICT DO NOTHING`, which waits
//! for a concurrent commit adding the same row; rows are never deleted. Locks are taken in
//! name order, and in the one mode each collection needs (never shared, then exclusive), so
//! commits cannot wait on one another in a cycle; `sql` gives the order across the store (a
//! key's claim row first, the collections next, the principal's share and totals slot last).
//!
//! SERIALIZABLE would find the same conflicts without the collection rows, but it would also
//! abort claims and finishes for reading the totals that others update (the bounds are read
//! without locks, on purpose: see `claims`), and its predicate locks are coarse enough to
//! abort transactions that touched nothing in common: each abort is a tool run again.
//!
//! What it costs: the commits that write into one collection take turns on its row (each a
//! few round trips and one disk flush), and a commit that only read a collection waits for
//! the one writing into it. Commits of different collections never wait for one another.
//!
//! # Versions: one sequence
//!
//! A writing commit draws its stamp from the sequence `record_stamp` once it holds every
//! collection it writes into, in the one statement that writes its records and moves its
//! collections on to the stamp. A sequence never hands out a number twice (a committed
//! transaction's numbers are flushed with it, so a crash does not hand them out again), and
//! its callers never wait for one another; a counter row would make every writing commit of
//! every collection take turns on it, and hold it until it commits. A sequence's numbers are
//! not in commit order and a commit that rolls back leaves a gap, but neither matters: the
//! check needs only that a record's version changes whenever it is written, and since every
//! writer of a collection draws its stamp while holding the collection's row, the stamps of a
//! record, and of a collection, grow from one commit to the next.
//!
//! # Outcomes
//!
//! With an outcome, the commit first locks the call's claim row and fails with `LeaseLost`
//! unless the lease holds it (so a lost lease wins over a conflict, and a takeover cannot
//! happen while the commit checks); it finishes the key last, exactly as `finish` does, after
//! the writes. A conflict rolls everything back: the lease is still held, nothing is written.
//! A deadlock the server broke (which the lock order should prevent) rolled back everything
//! too, and is answered as a conflict: the run goes again.
//!
//! # Request ids never claimed
//!
//! `commit_unclaimed` records a request id the store had not seen with the writes: one
//! transaction, one flush, where a claim and a commit under its lease take two. After its
//! collections are held and its reads checked and its writes applied, it inserts the key's claim
//! row (`ON CONFLICT DO NOTHING`, and only if the totals have room, as a claim checks them),
//! checks the principal's share, which the insert's trigger counted and locked, and finishes
//! the key as `finish` does. A key that exists, in any state, or bounds that leave no room,
//! roll everything back and answer "taken": the runtime then claims the request id, and the
//! claim waits, replays, settles what is due, makes room or refuses, as it always does.
//!
//! The claim row comes after the collections here, against the lock order, and cannot close a
//! cycle: the insert of a new row waits only for a transaction inserting, updating or deleting
//! that same key, and none of those waits for a collection afterwards (claims and sweeps take
//! none; a commit under a lease holds its collections before it updates its key; another
//! commit of an unclaimed key holds its collections before it inserts). A row merely locked by
//! a commit under a lease does not make the insert wait: it finds the key and does nothing.

use std::collections::BTreeMap;

use carmy_core::{
    Fingerprint, IdempotencyKey, Lease, Recorded,
    records::{Changes, Committed, Listing, MAX_LISTED, RecordKey, UnclaimedCommit, Versioned},
};
use deadpool_postgres::{Object, Transaction};
use tokio_postgres::error::SqlState;

use super::{
    PostgresStoreOptions,
    claims::{self, count},
    error::Failure,
    sql::Sql,
};
use crate::outcome::{self, key_bytes};

pub(super) async fn read(
    connection: &mut Object,
    sql: &Sql,
    key: &RecordKey,
) -> Result<Versioned, Failure> {
    let statement = connection.prepare_cached(&sql.read_record).await?;
    let row = connection
        .query_opt(
            &statement,
            &[&key.collection().as_bytes(), &key.key().as_bytes()],
        )
        .await?;
    let Some(row) = row else {
        return Ok(Versioned::ABSENT);
    };
    Ok(Versioned {
        value: Some(serde_json::from_str(row.try_get("value")?)?),
        version: stamp_from(row.try_get("version")?),
    })
}

pub(super) async fn list(
    connection: &mut Object,
    sql: &Sql,
    collection: &str,
) -> Result<Listing, Failure> {
    let statement = connection.prepare_cached(&sql.list_records).await?;
    let limit = i64::try_from(MAX_LISTED + 1).unwrap_or(i64::MAX);
    let rows = connection
        .query(&statement, &[&collection.as_bytes(), &limit])
        .await?;
    if rows.len() > MAX_LISTED {
        return Err(carmy_core::StoreError::Full(format!(
            "the collection `{collection}` holds more than {MAX_LISTED} records to list"
        ))
        .into());
    }
    let version = match rows.first() {
        Some(row) => stamp_from(row.try_get(0)?),
        None => 0,
    };
    let mut records = Vec::with_capacity(rows.len());
    for row in &rows {
        let Some(key) = row.try_get::<_, Option<&[u8]>>(1)? else {
            // The one row of a collection without records.
            continue;
        };
        let key = String::from_utf8(key.to_vec())
            .map_err(|_| Failure::Invalid("a kept record's key is not UTF-8".into()))?;
        records.push((key, serde_json::from_str(row.try_get(2)?)?));
    }
    Ok(Listing { version, records })
}

/// How a commit locks a collection's row.
#[derive(Clone, Copy)]
enum Mode {
    /// It only checks what it read or listed there.
    Check,
    /// It writes into it.
    Write,
}

/// What a commit writes, encoded and in key order, before its transaction begins.
struct Writes<'a> {
    put: (Vec<&'a [u8]>, Vec<&'a [u8]>, Vec<String>),
    delete: (Vec<&'a [u8]>, Vec<&'a [u8]>),
    collections: Vec<&'a [u8]>,
}

/// Checks `changes`, applies them and, with `outcome`, finishes its lease, in one transaction
/// (see the module docs); a deadlock or a serialization failure is a conflict.
pub(super) async fn commit(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    changes: &Changes,
    outcome: Option<(&Lease, &Recorded)>,
) -> Result<Committed, Failure> {
    let committed = try_commit(connection, sql, options, changes, outcome).await;
    rolled_back_as(committed, Committed::Conflict)
}

/// Whether `key` is unknown: no row, or a settled one past its retention.
pub(super) async fn unclaimed(
    connection: &mut Object,
    sql: &Sql,
    key: &IdempotencyKey,
) -> Result<bool, Failure> {
    let known = connection.prepare_cached(&sql.known).await?;
    let row = connection
        .query_opt(
            &known,
            &[&key.principal().as_bytes(), &key.request_id().as_bytes()],
        )
        .await?;
    Ok(row.is_none())
}

/// Checks `changes`, applies them and records `key`, never claimed, as finished with `recorded`,
/// in one transaction (see the module docs).
pub(super) async fn commit_unclaimed(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    changes: &Changes,
    key: &IdempotencyKey,
    fingerprint: Fingerprint,
    recorded: &Recorded,
) -> Result<UnclaimedCommit, Failure> {
    let committed = try_commit_unclaimed(
        connection,
        sql,
        options,
        changes,
        key,
        fingerprint,
        recorded,
    )
    .await;
    rolled_back_as(committed, UnclaimedCommit::Conflict)
}

/// A commit the server rolled back for a deadlock or a serialization failure, answered as
/// `conflict`: nothing was applied, and the run goes again.
fn rolled_back_as<T>(committed: Result<T, Failure>, conflict: T) -> Result<T, Failure> {
    match committed {
        Err(Failure::Sql(error))
            if error.code().is_some_and(|code| {
                *code == SqlState::T_R_DEADLOCK_DETECTED
                    || *code == SqlState::T_R_SERIALIZATION_FAILURE
            }) =>
        {
            tracing::warn!(%error, "a record commit was rolled back by the server; it runs again");
            Ok(conflict)
        }
        answer => answer,
    }
}

async fn try_commit(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    changes: &Changes,
    outcome: Option<(&Lease, &Recorded)>,
) -> Result<Committed, Failure> {
    // Everything encoded before the transaction, so no lock waits on serde_json.
    let writes = encode(changes)?;
    let finished = match outcome {
        Some((lease, recorded)) => Some((lease, recorded, outcome::encode(recorded)?)),
        None => None,
    };
    let transaction = connection.transaction().await?;
    if let Some((lease, _, _)) = &finished {
        claims::hold(&transaction, sql, lease).await?;
    }
    if !check_and_apply(&transaction, sql, changes, &writes).await? {
        transaction.rollback().await?;
        return Ok(Committed::Conflict);
    }
    if let Some((lease, recorded, text)) = finished {
        claims::keep_outcome(&transaction, sql, options, lease, recorded, text).await?;
    }
    transaction.commit().await?;
    Ok(Committed::Done)
}

async fn try_commit_unclaimed(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    changes: &Changes,
    key: &IdempotencyKey,
    fingerprint: Fingerprint,
    recorded: &Recorded,
) -> Result<UnclaimedCommit, Failure> {
    let writes = encode(changes)?;
    let text = outcome::encode(recorded)?;
    let (principal, request_id) = (key.principal().as_bytes(), key.request_id().as_bytes());
    let bounds = &options.request_ids;
    let weight = count(key_bytes(key));
    let token = uuid::Uuid::new_v4().as_u128();
    let transaction = connection.transaction().await?;
    if !check_and_apply(&transaction, sql, changes, &writes).await? {
        transaction.rollback().await?;
        return Ok(UnclaimedCommit::Conflict);
    }
    let insert = transaction.prepare_cached(&sql.insert_unclaimed).await?;
    let inserted = transaction
        .execute(
            &insert,
            &[
                &principal,
                &request_id,
                &&fingerprint.as_bytes()[..],
                &&token.to_be_bytes()[..],
                &weight,
                &count(bounds.max),
                &count(bounds.max_bytes),
            ],
        )
        .await?;
    if inserted == 0 {
        // Known, or no room in the totals: the claim that follows decides.
        transaction.rollback().await?;
        return Ok(UnclaimedCommit::Taken);
    }
    // Counted and locked by the insert's trigger, as for a claim.
    let share = transaction.prepare_cached(&sql.share).await?;
    let row = transaction.query_one(&share, &[&principal]).await?;
    let (held, weight): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    if held > count(bounds.max_per_principal) || weight > count(bounds.max_bytes_per_principal) {
        transaction.rollback().await?;
        return Ok(UnclaimedCommit::Taken);
    }
    let lease = Lease::new(key.clone(), token);
    claims::keep_outcome(&transaction, sql, options, &lease, recorded, text).await?;
    transaction.commit().await?;
    Ok(UnclaimedCommit::Done)
}

/// Locks the collections `changes` touches and checks what it read; if that holds, applies its
/// writes and answers `true`. `false`: something read has changed, and nothing was written.
async fn check_and_apply(
    transaction: &Transaction<'_>,
    sql: &Sql,
    changes: &Changes,
    writes: &Writes<'_>,
) -> Result<bool, Failure> {
    // Each collection once, in the one mode it needs, locked in name order (the map's): the
    // order every commit takes them in.
    let mut modes: BTreeMap<&str, Mode> = BTreeMap::new();
    for (key, _) in &changes.reads {
        modes.entry(key.collection()).or_insert(Mode::Check);
    }
    for (collection, _) in &changes.listed {
        modes.entry(collection).or_insert(Mode::Check);
    }
    for (key, _) in &changes.writes {
        modes.insert(key.collection(), Mode::Write);
    }
    for (collection, mode) in modes {
        let version = stamp_from(lock_collection(transaction, sql, collection, mode).await?);
        let stale = changes
            .listed
            .iter()
            .any(|(listed, seen)| listed == collection && *seen != version);
        if stale {
            return Ok(false);
        }
    }
    if !changes.reads.is_empty() && !reads_hold(transaction, sql, changes).await? {
        return Ok(false);
    }
    if !writes.collections.is_empty() {
        apply(transaction, sql, writes).await?;
    }
    Ok(true)
}

/// The writes of `changes`, each record's last one kept (the runtime sends each key once; a
/// hand-made list is applied in order all the same), values as JSON text.
fn encode(changes: &Changes) -> Result<Writes<'_>, Failure> {
    let mut last: BTreeMap<(&str, &str), Option<&serde_json::Value>> = BTreeMap::new();
    for (key, value) in &changes.writes {
        last.insert((key.collection(), key.key()), value.as_ref());
    }
    let mut writes = Writes {
        put: (Vec::new(), Vec::new(), Vec::new()),
        delete: (Vec::new(), Vec::new()),
        collections: Vec::new(),
    };
    for ((collection, key), value) in last {
        let (collection, key) = (collection.as_bytes(), key.as_bytes());
        match value {
            Some(value) => {
                writes.put.0.push(collection);
                writes.put.1.push(key);
                writes.put.2.push(serde_json::to_string(value)?);
            }
            None => {
                writes.delete.0.push(collection);
                writes.delete.1.push(key);
            }
        }
        if writes.collections.last() != Some(&collection) {
            writes.collections.push(collection);
        }
    }
    Ok(writes)
}

/// Locks `collection`'s row in `mode`, adding it first if no commit has yet; returns its
/// version.
async fn lock_collection(
    transaction: &Transaction<'_>,
    sql: &Sql,
    collection: &str,
    mode: Mode,
) -> Result<i64, Failure> {
    let lock = match mode {
        Mode::Write => &sql.lock_collection,
        Mode::Check => &sql.share_collection,
    };
    let lock = transaction.prepare_cached(lock).await?;
    let name = collection.as_bytes();
    if let Some(row) = transaction.query_opt(&lock, &[&name]).await? {
        return Ok(row.try_get(0)?);
    }
    let add = transaction.prepare_cached(&sql.add_collection).await?;
    transaction.execute(&add, &[&name]).await?;
    // Added by this transaction, or by one that committed while the insert waited: either
    // way this statement's snapshot has it.
    match transaction.query_opt(&lock, &[&name]).await? {
        Some(row) => Ok(row.try_get(0)?),
        None => Err(Failure::Invalid(format!(
            "the row of the collection `{collection}` vanished"
        ))),
    }
}

/// Whether every record `changes` read is still at the version it saw; its collections are
/// locked, so the answer holds until the commit.
async fn reads_hold(
    transaction: &Transaction<'_>,
    sql: &Sql,
    changes: &Changes,
) -> Result<bool, Failure> {
    let mut collections = Vec::with_capacity(changes.reads.len());
    let mut keys = Vec::with_capacity(changes.reads.len());
    let mut seen = Vec::with_capacity(changes.reads.len());
    for (key, version) in &changes.reads {
        collections.push(key.collection().as_bytes());
        keys.push(key.key().as_bytes());
        // No record has a version past i64::MAX: one seen there has changed.
        seen.push(i64::try_from(*version).unwrap_or(-1));
    }
    let stale = transaction.prepare_cached(&sql.stale_reads).await?;
    let row = transaction
        .query_one(&stale, &[&collections, &keys, &seen])
        .await?;
    Ok(row.try_get::<_, i64>(0)? == 0)
}

/// Draws the commit's stamp, then writes the records and moves the collections on to it.
async fn apply(
    transaction: &Transaction<'_>,
    sql: &Sql,
    writes: &Writes<'_>,
) -> Result<(), Failure> {
    // Every row it changes is in a collection this commit holds, so it waits for none.
    let apply = transaction.prepare_cached(&sql.apply_writes).await?;
    let (put, delete) = (&writes.put, &writes.delete);
    transaction
        .execute(
            &apply,
            &[
                &put.0,
                &put.1,
                &put.2,
                &delete.0,
                &delete.1,
                &writes.collections,
            ],
        )
        .await?;
    Ok(())
}

fn stamp_from(version: i64) -> u64 {
    u64::try_from(version).unwrap_or(0)
}
