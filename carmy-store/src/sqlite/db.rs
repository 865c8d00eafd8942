//! The store's transactions, run on its thread (see `worker`).
//!
//! Every claim, finish and release is one atomic step (`Db::atomic`) of a `BEGIN IMMEDIATE`
//! transaction, its own or its group's (see `worker`): the transaction takes the file's write
//! lock before it reads, so two processes claiming one key are serialized and exactly one
//! inserts the row. Time is the wall clock in milliseconds since the epoch, the one clock
//! that processes sharing the file agree on; a lease is an expiry instant kept in the row, so a
//! holder that dies (even by `kill -9`, between any two instructions) leaves a claim that
//! settles by its terms once that instant passes.

use std::{collections::HashMap, path::Path, sync::Arc};

use carmy_core::{
    ExecutionStatus, Fingerprint, IdempotencyKey, Lease, LeaseTerms, Recorded, Release, StoreError,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, ToSql, TransactionBehavior};
use tokio::sync::watch;

use super::{
    failure::{Failure, Result},
    integers::{count, ms, now_ms},
    options::SqliteStoreOptions,
    schema::{self, FINISHED, HELD, UNCERTAIN},
    task_holders::TaskHolders,
    task_poll::TaskPoll,
};
use crate::outcome;

/// What a claim found, before the async side turns a held key into a waiter.
pub(super) enum Seen {
    Acquired(Lease),
    Finished(Recorded),
    Conflict,
    Uncertain(ExecutionStatus),
    Running {
        token: u128,
        expires_at: i64,
        /// Closed when this process settles the key.
        settled: watch::Receiver<()>,
    },
}

/// The connection and what only its thread touches.
pub(super) struct Db {
    connection: Connection,
    options: SqliteStoreOptions,
    /// Keys this process saw held and someone waits on: dropping the sender wakes them.
    waiters: HashMap<IdempotencyKey, watch::Sender<()>>,
    /// Keys settled inside the group's transaction, whose waiters wake once it ends.
    settled_in_group: Vec<IdempotencyKey>,
    /// The tasks held here, shared with the async side (which subscribes to them).
    pub(super) holders: Arc<TaskHolders>,
    /// How far the poll for other processes' task writes got.
    pub(super) poll: TaskPoll,
}

/// Which writes of an atomic step to keep.
#[derive(Clone, Copy)]
pub(super) enum Keep {
    /// Only a step that succeeded: one that failed undoes everything it wrote.
    OnSuccess,
    /// Also a step that failed: what it settled on the way before refusing stays settled.
    Always,
}

/// What to settle or forget: one key, one principal's keys, or all of them.
#[derive(Clone, Copy)]
enum Scope<'a> {
    Key(&'a IdempotencyKey),
    Principal(&'a str),
    All,
}

impl Db {
    pub(super) fn open(
        path: &Path,
        options: SqliteStoreOptions,
        holders: Arc<TaskHolders>,
    ) -> Result<Self, StoreError> {
        let open = || -> Result<(Connection, TaskPoll)> {
            super::file::create_private(path).map_err(Failure::File)?;
            let mut connection = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            schema::prepare(&mut connection, options.busy_timeout)?;
            let poll = TaskPoll::start(&connection)?;
            Ok((connection, poll))
        };
        let (connection, poll) = open().map_err(|failure| {
            StoreError::unavailable(format!("cannot open {}: {failure}", path.display()))
        })?;
        Ok(Self {
            connection,
            options,
            waiters: HashMap::new(),
            settled_in_group: Vec::new(),
            holders,
            poll,
        })
    }

    pub(super) fn options(&self) -> &SqliteStoreOptions {
        &self.options
    }

    pub(super) fn connection(&self) -> &Connection {
        &self.connection
    }

    pub(super) fn connection_mut(&mut self) -> &mut Connection {
        &mut self.connection
    }

    /// `key` was settled by this process: its waiters here may claim again, once that is
    /// committed (at the end of the group, inside one).
    pub(super) fn settled(&mut self, key: &IdempotencyKey) {
        if self.connection.is_autocommit() {
            self.waiters.remove(key);
        } else {
            self.settled_in_group.push(key.clone());
        }
    }

    /// The group's transaction ended: the waiters of the keys it settled may claim again.
    /// (Also when it was rolled back: they then find their keys as they were, and wait again.)
    pub(super) fn group_ended(&mut self) {
        for key in std::mem::take(&mut self.settled_in_group) {
            self.waiters.remove(&key);
        }
    }

    /// Runs `step` atomically: in a `BEGIN IMMEDIATE` transaction of its own or, inside a
    /// group's transaction (see `worker`), as a savepoint of it. Its writes are kept as `keep`
    /// says, else undone.
    pub(super) fn atomic<T>(
        &mut self,
        keep: Keep,
        step: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T, StoreError> {
        let kept = |result: &Result<T>| matches!(keep, Keep::Always) || result.is_ok();
        let result = if self.connection.is_autocommit() {
            let transaction = self
                .connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(Failure::from)?;
            let result = step(&transaction);
            if kept(&result) {
                transaction.commit().map_err(Failure::from)?;
            }
            result
        } else {
            // Dropped unreleased, it is rolled back to.
            let savepoint = self.connection.savepoint().map_err(Failure::from)?;
            let result = step(&savepoint);
            if kept(&result) {
                savepoint.commit().map_err(Failure::from)?;
            }
            result
        };
        result.map_err(StoreError::from)
    }

    pub(super) fn claim(
        &mut self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> Result<Seen, StoreError> {
        let now = now_ms();
        let options = self.options;
        // Kept even when the store is full: what was settled or forgotten on the way stays
        // settled.
        let seen = self.atomic(Keep::Always, |transaction| {
            claim(transaction, &options, key, fingerprint, terms, now)
        })?;
        if !matches!(seen, Seen::Running { .. }) {
            // Anyone still waiting on an earlier, expired claim of this key: claim again.
            self.settled(key);
        }
        Ok(match seen {
            Seen::Running {
                token, expires_at, ..
            } => Seen::Running {
                token,
                expires_at,
                settled: self
                    .waiters
                    .entry(key.clone())
                    .or_insert_with(|| watch::Sender::new(()))
                    .subscribe(),
            },
            other => other,
        })
    }

    pub(super) fn finish(&mut self, lease: &Lease, recorded: &Recorded) -> Result<(), StoreError> {
        let now = now_ms();
        let options = self.options;
        self.atomic(Keep::OnSuccess, |transaction| {
            finish(transaction, &options, lease, recorded, now)
        })?;
        self.settled(lease.key());
        Ok(())
    }

    pub(super) fn release(&mut self, lease: &Lease, release: Release) -> Result<(), StoreError> {
        let now = now_ms();
        let ttl = ms(self.options.ttl);
        let key = lease.key();
        self.atomic(Keep::OnSuccess, |transaction| {
            held_by(transaction, lease)?;
            match release {
                Release::Retry => {
                    transaction
                        .prepare_cached(
                            "DELETE FROM carmy_claims WHERE principal = ?1 AND request_id = ?2",
                        )
                        .and_then(|mut statement| {
                            statement.execute((key.principal(), key.request_id()))
                        })?;
                }
                Release::Uncertain(status) => {
                    let status = outcome::status_text(status)?;
                    transaction
                        .prepare_cached(
                            "UPDATE carmy_claims SET state = ?3, status = ?4, token = NULL, \
                         if_lost = NULL, expires_at = ?5 \
                         WHERE principal = ?1 AND request_id = ?2",
                        )
                        .and_then(|mut statement| {
                            statement.execute((
                                key.principal(),
                                key.request_id(),
                                UNCERTAIN,
                                &status,
                                now.saturating_add(ttl),
                            ))
                        })?;
                }
            }
            Ok(())
        })?;
        self.settled(key);
        Ok(())
    }

    /// Whether `token` still holds `key` under a lease that has not run out: what a waiter
    /// polls when the holder may be another process.
    pub(super) fn still_held(
        &mut self,
        key: &IdempotencyKey,
        token: u128,
    ) -> Result<bool, StoreError> {
        let held = self
            .connection
            .prepare_cached(
                "SELECT 1 FROM carmy_claims WHERE principal = ?1 AND request_id = ?2 \
                 AND state = ?3 AND token = ?4 AND expires_at > ?5",
            )
            .and_then(|mut statement| {
                statement.exists((
                    key.principal(),
                    key.request_id(),
                    HELD,
                    &token.to_be_bytes()[..],
                    now_ms(),
                ))
            })
            .map_err(Failure::from)?;
        Ok(held)
    }

    /// Settles every expired lease and forgets every key and task past its retention; also
    /// drops the wake-up channels nobody listens to any more.
    pub(super) fn sweep(&mut self) -> Result<(), StoreError> {
        self.waiters.retain(|_, sender| sender.receiver_count() > 0);
        self.holders.prune(now_ms());
        let ttl = ms(self.options.ttl);
        self.atomic(Keep::OnSuccess, |transaction| {
            settle_due(transaction, Scope::All, now_ms(), ttl)
        })?;
        self.sweep_tasks()?;
        self.sweep_redemptions()?;
        Ok(())
    }
}

pub(super) fn claim(
    transaction: &Connection,
    options: &SqliteStoreOptions,
    key: &IdempotencyKey,
    fingerprint: Fingerprint,
    terms: LeaseTerms,
    now: i64,
) -> Result<Seen> {
    let ttl = ms(options.ttl);
    settle_due(transaction, Scope::Key(key), now, ttl)?;
    let row = transaction
        .prepare_cached(
            "SELECT fingerprint, state, token, expires_at, status, outcome FROM carmy_claims \
             WHERE principal = ?1 AND request_id = ?2",
        )?
        .query_row((key.principal(), key.request_id()), |row| {
            Ok((
                row.get::<_, Vec<u8>>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, Option<Vec<u8>>>(2)?,
                row.get::<_, i64>(3)?,
                row.get::<_, Option<String>>(4)?,
                row.get::<_, Option<String>>(5)?,
            ))
        })
        .optional()?;
    if let Some((kept, state, token, expires_at, status, kept_outcome)) = row {
        if kept != fingerprint.as_bytes() {
            return Ok(Seen::Conflict);
        }
        return match (state, token, status, kept_outcome) {
            (HELD, Some(token), _, _) => {
                let token = <[u8; 16]>::try_from(token.as_slice())
                    .map_err(|_| Failure::Invalid("a lease token is not 16 bytes".into()))?;
                Ok(Seen::Running {
                    token: u128::from_be_bytes(token),
                    expires_at,
                    settled: watch::channel(()).1,
                })
            }
            (FINISHED, _, _, Some(text)) => Ok(Seen::Finished(outcome::decode(&text)?)),
            (UNCERTAIN, _, Some(status), _) => Ok(Seen::Uncertain(outcome::status_from(&status)?)),
            _ => Err(Failure::Invalid(format!(
                "a kept claim is in no known state ({state})"
            ))),
        };
    }
    make_room(transaction, options, key, now)?;
    let token = uuid::Uuid::new_v4().as_u128();
    let if_lost = match terms.if_lost {
        Release::Retry => None,
        Release::Uncertain(status) => Some(outcome::status_text(status)?),
    };
    transaction
        .prepare_cached(
            "INSERT INTO carmy_claims \
             (principal, request_id, fingerprint, state, token, if_lost, expires_at, bytes) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute((
            key.principal(),
            key.request_id(),
            &fingerprint.as_bytes()[..],
            HELD,
            &token.to_be_bytes()[..],
            if_lost,
            now.saturating_add(ms(terms.duration)),
            count(outcome::key_bytes(key)),
        ))?;
    Ok(Seen::Acquired(Lease::new(key.clone(), token)))
}

/// Whether `key` may be claimed: its principal's share and the totals have room once expired
/// keys are forgotten. Nobody's live key is forgotten to make room.
fn make_room(
    transaction: &Connection,
    options: &SqliteStoreOptions,
    key: &IdempotencyKey,
    now: i64,
) -> Result<()> {
    let ttl = ms(options.ttl);
    let bytes = count(outcome::key_bytes(key));
    let share = |transaction: &Connection| -> Result<(i64, i64)> {
        Ok(transaction
            .prepare_cached("SELECT entries, bytes FROM carmy_shares WHERE principal = ?1")?
            .query_row([key.principal()], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?
            .unwrap_or((0, 0)))
    };
    let full_share = |(held, weight): (i64, i64)| {
        held >= count(options.request_ids.max_per_principal)
            || weight.saturating_add(bytes) > count(options.request_ids.max_bytes_per_principal)
    };
    let mut mine = share(transaction)?;
    if full_share(mine) {
        // Only now is the principal's backlog worth a look: most claims never pay for it.
        settle_due(transaction, Scope::Principal(key.principal()), now, ttl)?;
        mine = share(transaction)?;
        if full_share(mine) {
            let (held, weight) = mine;
            let (held, weight) = (u64::try_from(held), u64::try_from(weight));
            return Err(StoreError::share_full(
                held.unwrap_or_default(),
                weight.unwrap_or_default(),
                options.ttl,
            )
            .into());
        }
    }
    let totals = |transaction: &Connection| -> Result<(i64, i64)> {
        Ok(transaction
            .prepare_cached("SELECT entries, bytes FROM carmy_totals WHERE id = 0")?
            .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?)
    };
    let full_totals = |(entries, weight): (i64, i64)| {
        entries >= count(options.request_ids.max)
            || weight.saturating_add(bytes) > count(options.request_ids.max_bytes)
    };
    if full_totals(totals(transaction)?) {
        settle_due(transaction, Scope::All, now, ttl)?;
        if full_totals(totals(transaction)?) {
            return Err(StoreError::totals_full().into());
        }
    }
    Ok(())
}

pub(super) fn finish(
    transaction: &Connection,
    options: &SqliteStoreOptions,
    lease: &Lease,
    recorded: &Recorded,
    now: i64,
) -> Result<()> {
    held_by(transaction, lease)?;
    let key = lease.key();
    let mut text = outcome::encode(recorded)?;
    let size = text.len();
    let share: i64 = transaction
        .prepare_cached("SELECT bytes FROM carmy_shares WHERE principal = ?1")?
        .query_row([key.principal()], |row| row.get(0))
        .optional()?
        .unwrap_or(0);
    let total: i64 = transaction
        .prepare_cached("SELECT bytes FROM carmy_totals WHERE id = 0")?
        .query_row([], |row| row.get(0))?;
    let fits = size <= options.request_ids.max_outcome_bytes
        && share.saturating_add(count(size)) <= count(options.request_ids.max_bytes_per_principal)
        && total.saturating_add(count(size)) <= count(options.request_ids.max_bytes);
    if !fits {
        // The call ran: its retries must not run it again, even if its outcome cannot be kept.
        text = outcome::encode(&outcome::not_kept(recorded, size))?;
    }
    transaction
        .prepare_cached(
            "UPDATE carmy_claims SET state = ?3, outcome = ?4, bytes = bytes + ?5, token = NULL, \
             if_lost = NULL, expires_at = ?6 WHERE principal = ?1 AND request_id = ?2",
        )?
        .execute((
            key.principal(),
            key.request_id(),
            FINISHED,
            &text,
            count(text.len()),
            now.saturating_add(ms(options.ttl)),
        ))?;
    Ok(())
}

/// Fails with `LeaseLost` unless `lease` is the holder of its key.
pub(super) fn held_by(transaction: &Connection, lease: &Lease) -> Result<()> {
    let key = lease.key();
    let held = transaction
        .prepare_cached(
            "SELECT 1 FROM carmy_claims WHERE principal = ?1 AND request_id = ?2 \
             AND state = ?3 AND token = ?4",
        )?
        .exists((
            key.principal(),
            key.request_id(),
            HELD,
            &lease.token().to_be_bytes()[..],
        ))?;
    if held {
        Ok(())
    } else {
        Err(StoreError::LeaseLost.into())
    }
}

/// Settles the expired leases in `scope` as their terms say, and forgets its keys past their
/// retention. A lost write's uncertainty is kept for the retention period from its lease's
/// expiry.
fn settle_due(transaction: &Connection, scope: Scope<'_>, now: i64, ttl: i64) -> Result<()> {
    // A principal's keys are found through the expiry index, among those due: its share may
    // hold millions, of which the sweep leaves few due, and a claim refused for a full share
    // looks here each time, holding the file's write lock.
    let (index, filter) = match scope {
        Scope::Key(_) => (
            "",
            " AND principal = :principal AND request_id = :request_id",
        ),
        Scope::Principal(_) => (
            " INDEXED BY carmy_claims_expiry",
            " AND principal = :principal",
        ),
        Scope::All => ("", ""),
    };
    let (principal, request_id) = match scope {
        Scope::Key(key) => (Some(key.principal()), Some(key.request_id())),
        Scope::Principal(principal) => (Some(principal), None),
        Scope::All => (None, None),
    };
    // Uncertain first: a lost write whose retention has passed as well is then forgotten by
    // the last statement.
    let statements = [
        format!(
            "UPDATE carmy_claims{index} SET state = {UNCERTAIN}, status = if_lost, token = NULL, \
             if_lost = NULL, expires_at = expires_at + :ttl \
             WHERE state = {HELD} AND expires_at <= :now AND if_lost IS NOT NULL{filter}"
        ),
        format!(
            "DELETE FROM carmy_claims{index} \
             WHERE state = {HELD} AND expires_at <= :now AND if_lost IS NULL{filter}"
        ),
        format!(
            "DELETE FROM carmy_claims{index} \
             WHERE state != {HELD} AND expires_at <= :now{filter}"
        ),
    ];
    for sql in &statements {
        let mut statement = transaction.prepare_cached(sql)?;
        let values: [(&str, Option<&dyn ToSql>); 4] = [
            (":now", Some(&now)),
            (":ttl", Some(&ttl)),
            (
                ":principal",
                principal.as_ref().map(|value| value as &dyn ToSql),
            ),
            (
                ":request_id",
                request_id.as_ref().map(|value| value as &dyn ToSql),
            ),
        ];
        for (name, value) in values {
            if let (Some(index), Some(value)) = (statement.parameter_index(name)?, value) {
                statement.raw_bind_parameter(index, value)?;
            }
        }
        statement.raw_execute()?;
    }
    Ok(())
}
