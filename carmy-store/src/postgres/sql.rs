//! Every statement the store runs once connected, with the schema written in (once, at
//! connect: table names cannot be parameters).
//!
//! Time is always `statement_timestamp()`: the database server's clock, which every replica
//! shares whatever its own clock says, read once per statement (so an index can find what is
//! due) and moving forward between the statements of a transaction.
//!
//! Locks, in the one order every transaction takes them (so none can wait in a cycle): a key's
//! claim row, then the `collections` rows a record commit checks or writes (in name order),
//! then its principal's `shares` row, then that principal's `totals` slot. A transaction that
//! settles several keys takes their rows with `SKIP LOCKED` (it never waits for a row, so it
//! may take them after a share), then the shares in principal order, then the slots in slot
//! order. A record commit's writes to `records` rows never wait: every writer of a record
//! holds its collection's row first. See `claims`, `sweep` and `records` for why each lock is
//! taken.

use super::schema::quoted;

/// The claim row of a key, locked: what a claim decides on. `due`: its lease or retention has
/// run out; `left_ms`: how long its lease still holds, by the server's clock.
const LOOKUP: &str = "
SELECT fingerprint, state, token, status, outcome, watched,
       expires_at <= statement_timestamp() AS due,
       greatest(0, ceil(extract(epoch FROM expires_at - statement_timestamp()) * 1000))::int8
           AS left_ms
FROM {s}.claims WHERE principal = $1 AND request_id = $2
FOR UPDATE";

/// The totals across principals, read without a lock (see `claims` for why that is enough).
const TOTALS: &str = "
SELECT coalesce(sum(entries), 0)::int8, coalesce(sum(bytes), 0)::int8 FROM {s}.totals";

/// A principal's share, locked until the transaction ends: the claims and finishes of one
/// principal's keys take turns here, which keeps its bounds exact. (A claim's insert has
/// locked it already, through its trigger.)
const SHARE: &str = "SELECT entries, bytes FROM {s}.shares WHERE principal = $1 FOR UPDATE";

/// A new claim; nothing when another claim of the key committed since it was looked up.
const INSERT: &str = "
INSERT INTO {s}.claims (principal, request_id, fingerprint, state, token, if_lost, expires_at,
                        bytes)
VALUES ($1, $2, $3, 0, $4, $5, statement_timestamp() + $6::int8 * interval '1 millisecond', $7)
ON CONFLICT (principal, request_id) DO NOTHING";

/// Marks a held claim as waited for, so that its end is announced (see the schema's
/// `announce_settled`).
const WATCH: &str = "
UPDATE {s}.claims SET watched = true WHERE principal = $1 AND request_id = $2";

/// The claim row of `lease`, locked, if it is still the key's holder.
const HELD_BY: &str = "
SELECT 1 FROM {s}.claims WHERE principal = $1 AND request_id = $2 AND state = 0 AND token = $3
FOR UPDATE";

const FINISH: &str = "
UPDATE {s}.claims SET state = 1, outcome = $3, bytes = bytes + $4, token = NULL, if_lost = NULL,
    expires_at = statement_timestamp() + $5::int8 * interval '1 millisecond'
WHERE principal = $1 AND request_id = $2";

/// Forgets the claim of `lease`, if it is still the key's holder.
const FORGET: &str = "
DELETE FROM {s}.claims WHERE principal = $1 AND request_id = $2 AND state = 0 AND token = $3";

/// Keeps the key of `lease` as uncertain, if it is still the key's holder.
const KEEP_UNCERTAIN: &str = "
UPDATE {s}.claims SET state = 2, status = $4, token = NULL, if_lost = NULL,
    expires_at = statement_timestamp() + $5::int8 * interval '1 millisecond'
WHERE principal = $1 AND request_id = $2 AND state = 0 AND token = $3";

/// What a waiter polls: whether the claim it waits on still holds.
const STILL_HELD: &str = "
SELECT 1 FROM {s}.claims WHERE principal = $1 AND request_id = $2 AND state = 0 AND token = $3
  AND expires_at > statement_timestamp()";

/// Up to `$2` due claims of one principal, locked, skipping those another transaction holds
/// (it is settling them, or finishing them).
const DUE_OF_PRINCIPAL: &str = "
SELECT principal, request_id FROM {s}.claims
WHERE principal = $1 AND expires_at <= statement_timestamp()
ORDER BY expires_at LIMIT $2
FOR UPDATE SKIP LOCKED";

/// Up to `$1` due claims of anyone, oldest first, locked as `DUE_OF_PRINCIPAL` does.
const DUE: &str = "
SELECT principal, request_id FROM {s}.claims WHERE expires_at <= statement_timestamp()
ORDER BY expires_at LIMIT $1
FOR UPDATE SKIP LOCKED";

/// The shares of the principals given, locked in principal order.
const LOCK_SHARES: &str = "
SELECT FROM {s}.shares WHERE principal = ANY($1::bytea[]) ORDER BY principal FOR UPDATE";

/// The totals slots of the principals given, locked in slot order.
const LOCK_SLOTS: &str = "
SELECT FROM {s}.totals WHERE slot IN (SELECT {s}.slot_of(p) FROM unnest($1::bytea[]) AS p)
ORDER BY slot FOR UPDATE";

/// Of the keys given, the expired write leases whose retention has not run out as well: kept
/// as uncertain, for the retention period from the lease's expiry.
const SETTLE_LOST: &str = "
UPDATE {s}.claims SET state = 2, status = if_lost, token = NULL, if_lost = NULL,
    expires_at = expires_at + $3::int8 * interval '1 millisecond'
WHERE (principal, request_id) IN (SELECT * FROM unnest($1::bytea[], $2::bytea[]))
  AND state = 0 AND if_lost IS NOT NULL AND expires_at <= statement_timestamp()
  AND expires_at + $3::int8 * interval '1 millisecond' > statement_timestamp()";

/// Of the keys given, every other one that is due: expired read leases, expired write leases
/// past their retention too, settled keys past theirs. Run after `SETTLE_LOST`.
const FORGET_DUE: &str = "
DELETE FROM {s}.claims
WHERE (principal, request_id) IN (SELECT * FROM unnest($1::bytea[], $2::bytea[]))
  AND expires_at <= statement_timestamp()
  AND (state <> 0 OR if_lost IS NULL
       OR expires_at + $3::int8 * interval '1 millisecond' <= statement_timestamp())";

/// A record and its version.
const READ_RECORD: &str = "
SELECT value, version FROM {s}.records WHERE collection = $1 AND key = $2";

/// A collection's version and up to `$2` of its records in key order, in one statement: one
/// snapshot, so the version is that of the rows. A collection without records gives one row
/// whose key is NULL.
const LIST_RECORDS: &str = "
SELECT listed.version, record.key, record.value
FROM (SELECT coalesce((SELECT version FROM {s}.collections WHERE collection = $1), 0) AS version)
    AS listed
LEFT JOIN LATERAL (
    SELECT key, value FROM {s}.records WHERE collection = $1 ORDER BY key LIMIT $2
) AS record ON true
ORDER BY record.key";

/// A collection's row, locked for a commit that writes into it.
const LOCK_COLLECTION: &str = "
SELECT version FROM {s}.collections WHERE collection = $1 FOR UPDATE";

/// A collection's row, locked for a commit that only checks it (reads or lists it): such
/// commits check at once, and a commit that writes into it waits for them all.
const SHARE_COLLECTION: &str = "
SELECT version FROM {s}.collections WHERE collection = $1 FOR SHARE";

/// The row of a collection no commit has written into or checked yet. Waits for another
/// transaction adding the same row, then does nothing.
const ADD_COLLECTION: &str = "
INSERT INTO {s}.collections (collection, version) VALUES ($1, 0)
ON CONFLICT (collection) DO NOTHING";

/// How many of the records given are no longer at the version seen (0: absent).
const STALE_READS: &str = "
SELECT count(*) FROM unnest($1::bytea[], $2::bytea[], $3::int8[]) AS seen(collection, key, version)
LEFT JOIN {s}.records AS record USING (collection, key)
WHERE coalesce(record.version, 0) <> seen.version";

/// The stamp of a commit that writes.
const NEXT_STAMP: &str = "SELECT nextval('{s}.record_stamp')";

/// The records given, written with the stamp `$4`.
const PUT_RECORDS: &str = "
INSERT INTO {s}.records (collection, key, value, version)
SELECT collection, key, value, $4 FROM unnest($1::bytea[], $2::bytea[], $3::text[])
    AS put(collection, key, value)
ON CONFLICT (collection, key) DO UPDATE SET value = excluded.value, version = excluded.version";

const DELETE_RECORDS: &str = "
DELETE FROM {s}.records
WHERE (collection, key) IN (SELECT * FROM unnest($1::bytea[], $2::bytea[]))";

/// The collections given, moved on to the stamp `$2`.
const STAMP_COLLECTIONS: &str = "
UPDATE {s}.collections SET version = $2 WHERE collection = ANY($1::bytea[])";

/// The statements, for one schema.
pub(super) struct Sql {
    pub(super) lookup: String,
    pub(super) totals: String,
    pub(super) share: String,
    pub(super) insert: String,
    pub(super) watch: String,
    pub(super) held_by: String,
    pub(super) finish: String,
    pub(super) forget: String,
    pub(super) keep_uncertain: String,
    pub(super) still_held: String,
    pub(super) due_of_principal: String,
    pub(super) due: String,
    pub(super) lock_shares: String,
    pub(super) lock_slots: String,
    pub(super) settle_lost: String,
    pub(super) forget_due: String,
    pub(super) read_record: String,
    pub(super) list_records: String,
    pub(super) lock_collection: String,
    pub(super) share_collection: String,
    pub(super) add_collection: String,
    pub(super) stale_reads: String,
    pub(super) next_stamp: String,
    pub(super) put_records: String,
    pub(super) delete_records: String,
    pub(super) stamp_collections: String,
}

impl Sql {
    pub(super) fn new(schema: &str) -> Self {
        let s = quoted(schema);
        let sql = |template: &str| template.trim().replace("{s}", &s);
        Self {
            lookup: sql(LOOKUP),
            totals: sql(TOTALS),
            share: sql(SHARE),
            insert: sql(INSERT),
            watch: sql(WATCH),
            held_by: sql(HELD_BY),
            finish: sql(FINISH),
            forget: sql(FORGET),
            keep_uncertain: sql(KEEP_UNCERTAIN),
            still_held: sql(STILL_HELD),
            due_of_principal: sql(DUE_OF_PRINCIPAL),
            due: sql(DUE),
            lock_shares: sql(LOCK_SHARES),
            lock_slots: sql(LOCK_SLOTS),
            settle_lost: sql(SETTLE_LOST),
            forget_due: sql(FORGET_DUE),
            read_record: sql(READ_RECORD),
            list_records: sql(LIST_RECORDS),
            lock_collection: sql(LOCK_COLLECTION),
            share_collection: sql(SHARE_COLLECTION),
            add_collection: sql(ADD_COLLECTION),
            stale_reads: sql(STALE_READS),
            next_stamp: sql(NEXT_STAMP),
            put_records: sql(PUT_RECORDS),
            delete_records: sql(DELETE_RECORDS),
            stamp_collections: sql(STAMP_COLLECTIONS),
        }
    }
}
