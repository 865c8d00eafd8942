//! The file's layout, and how a connection to it is set up.
//!
//! Layout 1 holds the execution records; layout 2 adds the application's records
//! (`carmy_records`, see `carmy_core::records`); layout 3 adds the tasks (`carmy_tasks`, see
//! `carmy_core::TaskStore`); layout 4 adds the redeemed single-use tokens (`carmy_redeemed`,
//! `carmy_redeemers`, see `carmy_core::RedemptionStore` and `redemptions`). A file of an older layout is moved to the current one when opened,
//! in one transaction: each step only adds tables, so what the file held is kept as it was.
//!
//! One row per key in `carmy_claims`. `expires_at` means one thing per state, so one index
//! finds everything due: a held claim's lease expiry, a settled key's end of retention. The
//! per-principal shares and the totals are counted by triggers, in the transaction that
//! changes the rows, so they can never drift from them (a crash rolls both back together).

use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use super::failure::Failure;

/// The layout this code writes, kept in `PRAGMA user_version`.
const VERSION: i64 = 4;

/// A claim held under a lease.
pub(super) const HELD: i64 = 0;
/// Finished: `outcome` is kept for replay.
pub(super) const FINISHED: i64 = 1;
/// Interrupted after it may have had effects: `status` says how.
pub(super) const UNCERTAIN: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE carmy_claims (
    principal   TEXT    NOT NULL,
    request_id  TEXT    NOT NULL,
    fingerprint BLOB    NOT NULL,
    state       INTEGER NOT NULL,
    -- held: the holder's lease token (16 bytes) and, if it is lost, the status to keep the key
    -- as uncertain with (NULL: forget the claim).
    token       BLOB,
    if_lost     TEXT,
    -- held: when the lease runs out; settled: when the key is forgotten (ms since the epoch).
    expires_at  INTEGER NOT NULL,
    -- uncertain: the status retries are told.
    status      TEXT,
    -- finished: the outcome (crate::outcome's JSON).
    outcome     TEXT,
    -- what the key counts for in its principal's share.
    bytes       INTEGER NOT NULL,
    PRIMARY KEY (principal, request_id)
) WITHOUT ROWID;
CREATE INDEX carmy_claims_expiry ON carmy_claims (expires_at);

CREATE TABLE carmy_shares (
    principal TEXT    PRIMARY KEY,
    entries   INTEGER NOT NULL,
    bytes     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE carmy_totals (
    id      INTEGER PRIMARY KEY CHECK (id = 0),
    entries INTEGER NOT NULL,
    bytes   INTEGER NOT NULL
);
INSERT INTO carmy_totals VALUES (0, 0, 0);

CREATE TRIGGER carmy_claims_counted AFTER INSERT ON carmy_claims BEGIN
    INSERT INTO carmy_shares (principal, entries, bytes) VALUES (NEW.principal, 1, NEW.bytes)
        ON CONFLICT (principal) DO UPDATE SET entries = entries + 1, bytes = bytes + NEW.bytes;
    UPDATE carmy_totals SET entries = entries + 1, bytes = bytes + NEW.bytes;
END;
CREATE TRIGGER carmy_claims_uncounted AFTER DELETE ON carmy_claims BEGIN
    UPDATE carmy_shares SET entries = entries - 1, bytes = bytes - OLD.bytes
        WHERE principal = OLD.principal;
    DELETE FROM carmy_shares WHERE principal = OLD.principal AND entries <= 0;
    UPDATE carmy_totals SET entries = entries - 1, bytes = bytes - OLD.bytes;
END;
CREATE TRIGGER carmy_claims_reweighed AFTER UPDATE OF bytes ON carmy_claims
WHEN NEW.bytes != OLD.bytes BEGIN
    UPDATE carmy_shares SET bytes = bytes + NEW.bytes - OLD.bytes WHERE principal = NEW.principal;
    UPDATE carmy_totals SET bytes = bytes + NEW.bytes - OLD.bytes;
END;
";

/// Layout 2: the application's records, by collection and key, each with the stamp of the
/// commit that wrote it; each collection with the stamp of the last commit that wrote into it;
/// and the one counter the stamps come from. Keys compare bytewise (SQLite's `BINARY`), so
/// listings are in the order `carmy_core::records` promises.
const RECORDS: &str = "
CREATE TABLE carmy_records (
    collection TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    PRIMARY KEY (collection, key)
) WITHOUT ROWID;
CREATE TABLE carmy_collections (
    collection TEXT    PRIMARY KEY,
    version    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE carmy_record_stamp (
    id    INTEGER PRIMARY KEY CHECK (id = 0),
    stamp INTEGER NOT NULL
);
INSERT INTO carmy_record_stamp VALUES (0, 0);
";

/// Layout 3: the tasks, one row per task under its owner's key.
///
/// The record itself is `crate::task_record`'s JSON: the rules that change it are
/// `carmy_core`'s, applied in Rust to the record loaded in the transaction, so SQL only finds
/// rows and keeps the books. As for claims, `expires_at` means one thing per state, so one index
/// finds everything due: while the task runs (`token` set), when its holder's lease runs out;
/// once it ended (`token` NULL), when it is forgotten (its end plus its ttl).
///
/// `signal` is the stamp (from the one counter `carmy_task_stamp`) of the last write its holder
/// must act on: a cancel request, answers, its lease settled as lost. Stamps only grow, so a
/// process holding tasks learns what others wrote for them with one look at the rows whose
/// stamp is past the last it saw. Shares and totals are counted by triggers, as the claims'
/// are, with bounds of their own.
const TASKS: &str = "
CREATE TABLE carmy_tasks (
    principal  TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    record     TEXT    NOT NULL,
    token      BLOB,
    expires_at INTEGER NOT NULL,
    signal     INTEGER NOT NULL,
    bytes      INTEGER NOT NULL,
    PRIMARY KEY (principal, id)
) WITHOUT ROWID;
CREATE INDEX carmy_tasks_expiry ON carmy_tasks (expires_at);
CREATE INDEX carmy_tasks_signal ON carmy_tasks (signal);
CREATE TABLE carmy_task_stamp (
    id    INTEGER PRIMARY KEY CHECK (id = 0),
    stamp INTEGER NOT NULL
);
INSERT INTO carmy_task_stamp VALUES (0, 0);

CREATE TABLE carmy_task_shares (
    principal TEXT    PRIMARY KEY,
    tasks     INTEGER NOT NULL,
    bytes     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE carmy_task_totals (
    id    INTEGER PRIMARY KEY CHECK (id = 0),
    tasks INTEGER NOT NULL,
    bytes INTEGER NOT NULL
);
INSERT INTO carmy_task_totals VALUES (0, 0, 0);

CREATE TRIGGER carmy_tasks_counted AFTER INSERT ON carmy_tasks BEGIN
    INSERT INTO carmy_task_shares (principal, tasks, bytes) VALUES (NEW.principal, 1, NEW.bytes)
        ON CONFLICT (principal) DO UPDATE SET tasks = tasks + 1, bytes = bytes + NEW.bytes;
    UPDATE carmy_task_totals SET tasks = tasks + 1, bytes = bytes + NEW.bytes;
END;
CREATE TRIGGER carmy_tasks_uncounted AFTER DELETE ON carmy_tasks BEGIN
    UPDATE carmy_task_shares SET tasks = tasks - 1, bytes = bytes - OLD.bytes
        WHERE principal = OLD.principal;
    DELETE FROM carmy_task_shares WHERE principal = OLD.principal AND tasks <= 0;
    UPDATE carmy_task_totals SET tasks = tasks - 1, bytes = bytes - OLD.bytes;
END;
CREATE TRIGGER carmy_tasks_reweighed AFTER UPDATE OF bytes ON carmy_tasks
WHEN NEW.bytes != OLD.bytes BEGIN
    UPDATE carmy_task_shares SET bytes = bytes + NEW.bytes - OLD.bytes
        WHERE principal = NEW.principal;
    UPDATE carmy_task_totals SET bytes = bytes + NEW.bytes - OLD.bytes;
END;
";

/// Layout 4: the redeemed single-use tokens, one row per record under its principal, its issue
/// instant and its nonce (each `u64` kept in an `i64` in the same order), with the instant it
/// expires; and one row per principal holding records, with its floor (records as old or older
/// are refused: they may have been let go) and the expiry of its newest record.
const REDEMPTIONS: &str = "
CREATE TABLE carmy_redeemed (
    principal  TEXT    NOT NULL,
    issued_at  INTEGER NOT NULL,
    nonce      INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (principal, issued_at, nonce)
) WITHOUT ROWID;
CREATE INDEX carmy_redeemed_expiry ON carmy_redeemed (expires_at);
CREATE TABLE carmy_redeemers (
    principal   TEXT    PRIMARY KEY,
    floor_at    INTEGER,
    floor_nonce INTEGER,
    expires_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX carmy_redeemers_expiry ON carmy_redeemers (expires_at);
";

/// Prepared statements kept by the connection. The store runs about fifty distinct statements,
/// and a transactional call under a request id cycles through some twenty of them: with
/// rusqlite's default of sixteen, the least recently used one is always the next needed, and
/// every statement was parsed and planned again each time.
const STATEMENTS: usize = 64;

/// What each layout adds, in order: a file of layout `n` lacks the tables of the layouts after.
const LAYOUTS: [(i64, &str); 4] = [(1, SCHEMA), (2, RECORDS), (3, TASKS), (4, REDEMPTIONS)];

/// Sets `connection` up for durable, shared use, and creates the layout if the file is new.
pub(super) fn prepare(connection: &mut Connection, busy_timeout: Duration) -> Result<(), Failure> {
    // Another process may hold the write lock: wait for it rather than fail at once.
    connection.busy_timeout(busy_timeout)?;
    connection.set_prepared_statement_cache_capacity(STATEMENTS);
    // WAL: readers never block the writer and a commit is one append, which survives a crash
    // whole or not at all. The mode is kept in the file, for every process that opens it.
    let mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Failure::Invalid(format!(
            "the store's file cannot use write-ahead logging (journal mode {mode})"
        )));
    }
    // FULL: a commit is on disk before `finish` returns. NORMAL would be durable against a
    // process crash but could lose the last commits on a power loss; a finished write that is
    // forgotten runs twice, which is what this store exists to prevent.
    connection.pragma_update(None, "synchronous", "FULL")?;
    connection.pragma_update(None, "foreign_keys", "OFF")?;

    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = transaction.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    match version {
        // A new file gets every layout's tables; an older one the tables it lacks.
        0..VERSION => {
            for (layout, tables) in LAYOUTS {
                if version < layout {
                    transaction.execute_batch(tables)?;
                }
            }
            transaction.pragma_update(None, "user_version", VERSION)?;
        }
        VERSION => {}
        newer => {
            return Err(Failure::Invalid(format!(
                "the store's file has layout {newer}, newer than this program's ({VERSION})"
            )));
        }
    }
    transaction.commit()?;
    Ok(())
}
