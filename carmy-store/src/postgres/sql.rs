//! Every statement the store runs once connected, with the schema written in (once, at
//! connect: table names cannot be parameters).
//!
//! Time is always `statement_timestamp()`: the database server's clock, which every replica
//! shares whatever its own clock says, read once per statement (so an index can find what is
//! due) and moving forward between the statements of a transaction.
//!
//! Locks, in the one order every transaction takes them (so none can wait in a cycle): a key's
//! claim row, then the `collections` rows a record commit checks or writes (in name order),
//! then its principal's `shares` row, then that principal's `totals` slot. (A commit that
//! records a request id never claimed inserts its row after the collections: see `records`
//! for why that insert cannot close a cycle.) A transaction that
//! settles several keys takes their rows with `SKIP LOCKED` (it never waits for a row, so it
//! may take them after a share), then the shares in principal order, then the slots in slot
//! order. A record commit's writes to `records` rows never wait: every writer of a record
//! holds its collection's row first. See `claims`, `sweep` and `records` for why each lock is
//! taken.
//!
//! Tasks have locks of their own, in the same shape and never mixed with those above (no
//! transaction touches both a task and a claim or a record, so the two orders cannot meet): a
//! task's row, then its principal's `task_shares` row, then that principal's `task_totals` slot.
//! A transaction that settles several tasks (the sweep) takes their rows with `SKIP LOCKED`,
//! then the shares in principal order, then the slots in slot order, as for claims. See
//! `tasks`.

use super::schema::quoted;

/// One redemption, decided by the schema's `redeem` function in this one statement (see
/// `redemptions`).
const REDEEM: &str = "SELECT {s}.redeem($1, $2, $3, $4, $5, $6, $7, $8)";

/// One take from a rate-limit bucket, decided by the schema's `take_rate` function in this one
/// statement (see `rate_limits`).
const TAKE_RATE: &str = "SELECT {s}.take_rate($1, $2, $3, $4)";

/// Up to `$1` rate-limit buckets that are full again, forgotten; rows a take holds are left to
/// the next sweep.
const FORGET_FULL_BUCKETS: &str = "
DELETE FROM {s}.rate_buckets WHERE (tool, principal) IN (
    SELECT tool, principal FROM {s}.rate_buckets WHERE full_at <= statement_timestamp()
    LIMIT $1 FOR UPDATE SKIP LOCKED)";

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

/// Whether a key is known: held, or settled and within its retention (`RecordStore::unclaimed`).
const KNOWN: &str = "
SELECT 1 FROM {s}.claims WHERE principal = $1 AND request_id = $2
  AND (state = 0 OR expires_at > statement_timestamp())";

/// The claim of a request id never claimed, inserted by the record commit that finishes it
/// (see `records`): nothing when the key is known (whatever its state), or when the totals have
/// no room for it.
const INSERT_UNCLAIMED: &str = "
INSERT INTO {s}.claims (principal, request_id, fingerprint, state, token, expires_at, bytes)
SELECT $1, $2, $3, 0, $4, statement_timestamp() + interval '1 minute', $5::int8
WHERE (SELECT coalesce(sum(entries), 0) < $6::int8
              AND coalesce(sum(bytes), 0) + $5::int8 <= $7::int8
       FROM {s}.totals)
ON CONFLICT (principal, request_id) DO NOTHING";

/// Marks a held claim as waited for, so that its end is announced (see the schema's
/// `announce_settled`).
const WATCH: &str = "
UPDATE {s}.claims SET watched = true WHERE principal = $1 AND request_id = $2";

/// The claim row of `lease`, locked, if it is still the key's holder.
const HELD_BY: &str = "
SELECT 1 FROM {s}.claims WHERE principal = $1 AND request_id = $2 AND state = 0 AND token = $3
FOR UPDATE";

/// A claim in one statement, when nothing has to be settled first (see `claims`); its columns
/// named as `LOOKUP`'s, which a seen key is read from.
const CLAIM: &str = "
SELECT kind, kept_fingerprint AS fingerprint, kept_state AS state, kept_token AS token,
       kept_status AS status, kept_outcome AS outcome, kept_left_ms AS left_ms
FROM {s}.claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// A finish in one statement: whether the lease still held the key (see `claims`).
const FINISH: &str = "SELECT {s}.finish($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

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

/// A commit's writes, in one statement: one stamp drawn from the sequence, the records given
/// put (`$1`-`$3`) and deleted (`$4`, `$5`) with it, and the collections given (`$6`) moved on
/// to it. The sub-statements see one snapshot; a key is never both put and deleted.
const APPLY_WRITES: &str = "
WITH stamp AS (SELECT nextval('{s}.record_stamp') AS version),
put AS (
    INSERT INTO {s}.records (collection, key, value, version)
    SELECT collection, key, value, (SELECT version FROM stamp)
    FROM unnest($1::bytea[], $2::bytea[], $3::text[]) AS put(collection, key, value)
    ON CONFLICT (collection, key) DO UPDATE SET value = excluded.value, version = excluded.version
),
deleted AS (
    DELETE FROM {s}.records
    WHERE (collection, key) IN (SELECT * FROM unnest($4::bytea[], $5::bytea[]))
)
UPDATE {s}.collections SET version = (SELECT version FROM stamp)
WHERE collection = ANY($6::bytea[])";

/// The server's clock now, in milliseconds since the epoch, and the task totals across
/// principals, read without a lock (as the claims' totals are).
const TASK_NOW_AND_TOTALS: &str = "
SELECT floor(extract(epoch FROM statement_timestamp()) * 1000)::int8,
       coalesce(sum(tasks), 0)::int8, coalesce(sum(bytes), 0)::int8
FROM {s}.task_totals";

/// A new task held under the lease `$4` for `$5` ms; nothing when the id is taken.
const TASK_INSERT: &str = "
INSERT INTO {s}.tasks (principal, id, record, token, expires_at, bytes)
VALUES ($1, $2, $3, $4, statement_timestamp() + $5::int8 * interval '1 millisecond', $6)
ON CONFLICT (principal, id) DO NOTHING";

/// A task's row, as every call decides on it: `due`, its lease or its retention ran out;
/// times in milliseconds since the epoch, by the server's clock.
const TASK_READ: &str = "
SELECT record, token, signal, bytes, expires_at <= statement_timestamp() AS due,
       floor(extract(epoch FROM expires_at) * 1000)::int8 AS expires_ms,
       floor(extract(epoch FROM statement_timestamp()) * 1000)::int8 AS now_ms
FROM {s}.tasks WHERE principal = $1 AND id = $2";

/// A principal's task share, locked until the transaction ends (after the task's row).
const TASK_SHARE: &str = "SELECT tasks, bytes FROM {s}.task_shares WHERE principal = $1 FOR UPDATE";

/// A task's record rewritten after a rule of `TaskRecord` changed it; `$5` more writes its
/// holder must act on.
const TASK_WRITE: &str = "
UPDATE {s}.tasks SET record = $3, bytes = $4, signal = signal + $5
WHERE principal = $1 AND id = $2";

/// A lease extended to `$3` ms from now, and the record rewritten if `$4` is given (a report).
const TASK_RENEW: &str = "
UPDATE {s}.tasks
SET expires_at = statement_timestamp() + $3::int8 * interval '1 millisecond',
    record = coalesce($4::text, record), bytes = coalesce($5::int8, bytes)
WHERE principal = $1 AND id = $2";

/// A task ended by its holder: no lease any more, kept for `$5` ms (its ttl) from now.
const TASK_FINISH: &str = "
UPDATE {s}.tasks SET record = $3, bytes = $4, token = NULL,
    expires_at = statement_timestamp() + $5::int8 * interval '1 millisecond'
WHERE principal = $1 AND id = $2";

/// Tasks whose lease ran out, settled lost: their records ended, kept for their ttl from the
/// lease's expiry (as a task is kept for its ttl from its end).
const TASK_SETTLE_LOST: &str = "
UPDATE {s}.tasks AS task
SET record = lost.record, bytes = lost.bytes, token = NULL,
    expires_at = task.expires_at + lost.ttl_ms * interval '1 millisecond'
FROM unnest($1::bytea[], $2::bytea[], $3::text[], $4::int8[], $5::int8[])
    AS lost(principal, id, record, bytes, ttl_ms)
WHERE task.principal = lost.principal AND task.id = lost.id AND task.token IS NOT NULL";

/// Tasks forgotten.
const TASK_FORGET: &str = "
DELETE FROM {s}.tasks WHERE (principal, id) IN (SELECT * FROM unnest($1::bytea[], $2::bytea[]))";

/// Up to `$1` due tasks of anyone, oldest first, locked, skipping those another transaction
/// holds; the record only of those still running (the others are forgotten unread).
const TASKS_DUE: &str = "
SELECT principal, id, CASE WHEN token IS NOT NULL THEN record END AS record,
       floor(extract(epoch FROM expires_at) * 1000)::int8 AS expires_ms,
       floor(extract(epoch FROM statement_timestamp()) * 1000)::int8 AS now_ms
FROM {s}.tasks WHERE expires_at <= statement_timestamp()
ORDER BY expires_at LIMIT $1
FOR UPDATE SKIP LOCKED";

/// Up to `$2` due tasks of one principal, locked as `TASKS_DUE` does.
const TASKS_DUE_OF_PRINCIPAL: &str = "
SELECT principal, id, CASE WHEN token IS NOT NULL THEN record END AS record,
       floor(extract(epoch FROM expires_at) * 1000)::int8 AS expires_ms,
       floor(extract(epoch FROM statement_timestamp()) * 1000)::int8 AS now_ms
FROM {s}.tasks WHERE principal = $1 AND expires_at <= statement_timestamp()
ORDER BY expires_at LIMIT $2
FOR UPDATE SKIP LOCKED";

/// The task shares of the principals given, locked in principal order.
const LOCK_TASK_SHARES: &str = "
SELECT FROM {s}.task_shares WHERE principal = ANY($1::bytea[]) ORDER BY principal FOR UPDATE";

/// The task totals slots of the principals given, locked in slot order.
const LOCK_TASK_SLOTS: &str = "
SELECT FROM {s}.task_totals WHERE slot IN (SELECT {s}.slot_of(p) FROM unnest($1::bytea[]) AS p)
ORDER BY slot FOR UPDATE";

/// What a holder's `changed` polls: the task's count of writes to act on, while the lease `$3`
/// still holds it.
const TASK_SIGNAL: &str = "
SELECT signal FROM {s}.tasks
WHERE principal = $1 AND id = $2 AND token = $3 AND expires_at > statement_timestamp()";

/// The statements, for one schema.
pub(super) struct Sql {
    pub(super) claim: String,
    pub(super) lookup: String,
    pub(super) totals: String,
    pub(super) share: String,
    pub(super) insert: String,
    pub(super) known: String,
    pub(super) insert_unclaimed: String,
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
    pub(super) apply_writes: String,
    pub(super) task_now_and_totals: String,
    pub(super) task_insert: String,
    pub(super) task_read: String,
    pub(super) task_lock: String,
    pub(super) task_share: String,
    pub(super) task_write: String,
    pub(super) task_renew: String,
    pub(super) task_finish: String,
    pub(super) task_settle_lost: String,
    pub(super) task_forget: String,
    pub(super) tasks_due: String,
    pub(super) tasks_due_of_principal: String,
    pub(super) lock_task_shares: String,
    pub(super) lock_task_slots: String,
    pub(super) task_signal: String,
    pub(super) redeem: String,
    pub(super) take_rate: String,
    pub(super) forget_full_buckets: String,
}

impl Sql {
    pub(super) fn new(schema: &str) -> Self {
        let s = quoted(schema);
        let sql = |template: &str| template.trim().replace("{s}", &s);
        Self {
            claim: sql(CLAIM),
            lookup: sql(LOOKUP),
            totals: sql(TOTALS),
            share: sql(SHARE),
            insert: sql(INSERT),
            known: sql(KNOWN),
            insert_unclaimed: sql(INSERT_UNCLAIMED),
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
            apply_writes: sql(APPLY_WRITES),
            task_now_and_totals: sql(TASK_NOW_AND_TOTALS),
            task_insert: sql(TASK_INSERT),
            task_read: sql(TASK_READ),
            // The same row, locked: what every call that may change it decides on.
            task_lock: format!("{} FOR UPDATE", sql(TASK_READ)),
            task_share: sql(TASK_SHARE),
            task_write: sql(TASK_WRITE),
            task_renew: sql(TASK_RENEW),
            task_finish: sql(TASK_FINISH),
            task_settle_lost: sql(TASK_SETTLE_LOST),
            task_forget: sql(TASK_FORGET),
            tasks_due: sql(TASKS_DUE),
            tasks_due_of_principal: sql(TASKS_DUE_OF_PRINCIPAL),
            lock_task_shares: sql(LOCK_TASK_SHARES),
            lock_task_slots: sql(LOCK_TASK_SLOTS),
            task_signal: sql(TASK_SIGNAL),
            redeem: sql(REDEEM),
            take_rate: sql(TAKE_RATE),
            forget_full_buckets: sql(FORGET_FULL_BUCKETS),
        }
    }
}
