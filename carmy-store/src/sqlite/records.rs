//! The application's records in the file: reads, listings and commits, run on the store's
//! thread like its claims. A commit is one `BEGIN IMMEDIATE` transaction: the lease checked
//! (or, for a request id never claimed, claimed there), every read's version checked, the
//! writes stamped and applied, the outcome recorded, and all of it on disk together, or none
//! of it.

use std::time::Duration;

use carmy_core::{
    Fingerprint, IdempotencyKey, Lease, LeaseTerms, Recorded, Release, StoreError,
    records::{Changes, Committed, Listing, MAX_LISTED, RecordKey, UnclaimedCommit, Versioned},
};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;

use super::{
    db::{Db, Keep, Seen, claim, finish, held_by},
    failure::Failure,
    integers::now_ms,
    schema::HELD,
};

type Result<T, E = Failure> = std::result::Result<T, E>;

impl Db {
    pub(super) fn read_record(&mut self, key: &RecordKey) -> Result<Versioned, StoreError> {
        let row = self
            .connection()
            .prepare_cached(
                "SELECT value, version FROM carmy_records WHERE collection = ?1 AND key = ?2",
            )
            .and_then(|mut statement| {
                statement
                    .query_row((key.collection(), key.key()), |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
                    })
                    .optional()
            })
            .map_err(Failure::from)?;
        Ok(match row {
            Some((text, version)) => Versioned {
                value: Some(serde_json::from_str(&text).map_err(Failure::from)?),
                version: stamp_from(version),
            },
            None => Versioned::ABSENT,
        })
    }

    pub(super) fn list_records(&mut self, collection: &str) -> Result<Listing, StoreError> {
        // One read transaction: the version and the rows are of the same moment, whatever
        // another process commits meanwhile. Inside a group's transaction, that one.
        if !self.connection().is_autocommit() {
            return Ok(list(self.connection(), collection)?);
        }
        let transaction = self
            .connection_mut()
            .transaction_with_behavior(TransactionBehavior::Deferred)
            .map_err(Failure::from)?;
        let listing = list(&transaction, collection)?;
        transaction.commit().map_err(Failure::from)?;
        Ok(listing)
    }

    pub(super) fn commit_records(
        &mut self,
        changes: &Changes,
        outcome: Option<(&Lease, &Recorded)>,
    ) -> Result<Committed, StoreError> {
        let now = now_ms();
        let options = *self.options();
        let committed = self.atomic(Keep::OnSuccess, |transaction| {
            if let Some((lease, _)) = outcome {
                held_by(transaction, lease)?;
            }
            if !unchanged(transaction, changes)? {
                // Nothing was written.
                return Ok(Committed::Conflict);
            }
            apply(transaction, changes)?;
            if let Some((lease, recorded)) = outcome {
                finish(transaction, &options, lease, recorded, now)?;
            }
            Ok(Committed::Done)
        })?;
        if committed == Committed::Conflict {
            return Ok(committed);
        }
        if let Some((lease, _)) = outcome {
            self.settled(lease.key());
        }
        Ok(Committed::Done)
    }
}

impl Db {
    /// Whether `key` is unknown: no row, or a settled one past its retention. (A lapsed claim
    /// counts as known: the claim that settles it says what it became.)
    pub(super) fn unclaimed(&mut self, key: &IdempotencyKey) -> Result<bool, StoreError> {
        let known = self
            .connection()
            .prepare_cached(
                "SELECT 1 FROM carmy_claims WHERE principal = ?1 AND request_id = ?2 \
                 AND (state = ?3 OR expires_at > ?4)",
            )
            .and_then(|mut statement| {
                statement.exists((key.principal(), key.request_id(), HELD, now_ms()))
            })
            .map_err(Failure::from)?;
        Ok(!known)
    }

    /// `commit_records` of a call whose request id was never claimed: claimed, applied and
    /// finished in one atomic step, or nothing.
    pub(super) fn commit_unclaimed(
        &mut self,
        changes: &Changes,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        recorded: &Recorded,
    ) -> Result<UnclaimedCommit, StoreError> {
        let now = now_ms();
        let options = *self.options();
        // Held only inside this transaction: nobody sees the claim before it is finished.
        let terms = LeaseTerms {
            duration: Duration::from_secs(60),
            if_lost: Release::Retry,
        };
        let committed = self.atomic(Keep::OnSuccess, |transaction| {
            if !unchanged(transaction, changes)? {
                return Ok(UnclaimedCommit::Conflict);
            }
            // Checks the bounds: a full share fails the step, and nothing is kept.
            let Seen::Acquired(lease) = claim(transaction, &options, key, fingerprint, terms, now)?
            else {
                return Ok(UnclaimedCommit::Taken);
            };
            apply(transaction, changes)?;
            finish(transaction, &options, &lease, recorded, now)?;
            Ok(UnclaimedCommit::Done)
        })?;
        if committed == UnclaimedCommit::Done {
            self.settled(key);
        }
        Ok(committed)
    }
}

fn list(transaction: &Connection, collection: &str) -> Result<Listing> {
    let version: i64 = transaction
        .prepare_cached("SELECT version FROM carmy_collections WHERE collection = ?1")?
        .query_row([collection], |row| row.get(0))
        .optional()?
        .unwrap_or(0);
    let mut statement = transaction.prepare_cached(
        "SELECT key, value FROM carmy_records WHERE collection = ?1 ORDER BY key LIMIT ?2",
    )?;
    let limit = i64::try_from(MAX_LISTED + 1).unwrap_or(i64::MAX);
    let rows = statement.query_map((collection, limit), |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
    })?;
    let mut records = Vec::new();
    for row in rows {
        let (key, text) = row?;
        records.push((key, serde_json::from_str::<Value>(&text)?));
    }
    if records.len() > MAX_LISTED {
        return Err(StoreError::Full(format!(
            "the collection `{collection}` holds more than {MAX_LISTED} records to list"
        ))
        .into());
    }
    Ok(Listing {
        version: stamp_from(version),
        records,
    })
}

/// Whether every record and collection `changes` read is still at the version it saw.
fn unchanged(transaction: &Connection, changes: &Changes) -> Result<bool> {
    let mut record = transaction
        .prepare_cached("SELECT version FROM carmy_records WHERE collection = ?1 AND key = ?2")?;
    for (key, seen) in &changes.reads {
        let version: Option<i64> = record
            .query_row((key.collection(), key.key()), |row| row.get(0))
            .optional()?;
        if version.map_or(0, stamp_from) != *seen {
            return Ok(false);
        }
    }
    let mut collection = transaction
        .prepare_cached("SELECT version FROM carmy_collections WHERE collection = ?1")?;
    for (name, seen) in &changes.listed {
        let version: Option<i64> = collection.query_row([name], |row| row.get(0)).optional()?;
        if version.map_or(0, stamp_from) != *seen {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Stamps and applies the writes, and moves each collection written on to the stamp.
fn apply(transaction: &Connection, changes: &Changes) -> Result<()> {
    if changes.writes.is_empty() {
        return Ok(());
    }
    let stamp: i64 = transaction
        .prepare_cached(
            "UPDATE carmy_record_stamp SET stamp = stamp + 1 WHERE id = 0 RETURNING stamp",
        )?
        .query_row([], |row| row.get(0))?;
    let mut put = transaction.prepare_cached(
        "INSERT INTO carmy_records (collection, key, value, version) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (collection, key) DO UPDATE SET value = excluded.value, \
         version = excluded.version",
    )?;
    let mut delete = transaction
        .prepare_cached("DELETE FROM carmy_records WHERE collection = ?1 AND key = ?2")?;
    let mut moved = transaction.prepare_cached(
        "INSERT INTO carmy_collections (collection, version) VALUES (?1, ?2) \
         ON CONFLICT (collection) DO UPDATE SET version = excluded.version",
    )?;
    let mut collections = std::collections::BTreeSet::new();
    for (key, value) in &changes.writes {
        match value {
            Some(value) => {
                let text = serde_json::to_string(value)?;
                put.execute((key.collection(), key.key(), text, stamp))?;
            }
            None => {
                delete.execute((key.collection(), key.key()))?;
            }
        }
        collections.insert(key.collection());
    }
    for collection in collections {
        moved.execute((collection, stamp))?;
    }
    Ok(())
}

fn stamp_from(version: i64) -> u64 {
    u64::try_from(version).unwrap_or(0)
}
