//! [`TaskStore`] for [`SqliteStore`]: tasks in the same file as the claims and the records.
//!
//! Every call is one `BEGIN IMMEDIATE` transaction on the store's thread: it loads the task's
//! row, settles a lease that ran out as [`TaskEnding::lost`], applies `carmy_core`'s rule to the
//! record ([`TaskRecord::take_answers`], [`TaskRecord::set_questions`], [`TaskRecord::apply`],
//! [`TaskRecord::end`]), and saves it. So the rules are the memory store's, and any number of
//! processes sharing the file apply them one at a time. The row's key is the owner and the id,
//! so another owner's task is simply not found. Time is the wall clock in milliseconds, as for
//! claims: a lease is its expiry instant in the row, and a holder that dies (even by `kill -9`)
//! leaves a task that fails once that instant passes, whoever looks next (or the sweep).
//!
//! A holder waits in [`TaskStore::changed`] on its task's channel (`task_holders`). The store's
//! own writes move it after their commit. Other connections' writes (another process's, or
//! another `SqliteStore`'s on the file) are found by the store's thread: while the store holds
//! tasks, it reads the connection's `data_version` (which SQLite changes when another connection
//! commits to the file) every 10 ms at first, then less often up to every 250 ms while nothing
//! is found, and when it changed, the rows whose `signal` stamp is past the last it saw. So
//! waiting costs a pragma a poll, however many tasks are held, and a cancel or an answer given
//! through another connection reaches the holder within a poll.

use std::{collections::BTreeMap, future::Future, sync::Arc, time::Duration};

use carmy_core::{
    Asks, Created, NewTask, Responded, StoreError, TaskEnding, TaskKey, TaskLease, TaskRecord,
    TaskReport, TaskSignals, TaskStore,
};
use rusqlite::{OptionalExtension, Row as SqlRow, Transaction, TransactionBehavior};
use serde_json::Value;

use super::{
    SqliteStore,
    db::Db,
    failure::{Failure, Result},
    integers::{count, ms, now_ms},
    options::SqliteStoreOptions,
    task_holders::Wake,
    task_poll::data_version,
};
use crate::{outcome, task_record};

/// What a task's row counts for in its principal's share besides its record's text: the key
/// in the table and its indexes, the other columns, the books.
const ROW_BYTES: usize = 256;

/// Tasks live in the same file as the claims and the records: one file, one thread, and any
/// process that opens the file reads, answers and cancels the tasks the others run. Bounded as
/// `MemoryTaskStore` is, with the same defaults ([`SqliteStoreOptions::max_tasks_per_principal`]
/// and the others).
impl TaskStore for SqliteStore {
    async fn create(&self, task: NewTask, lease: Duration) -> Result<Created, StoreError> {
        self.worker.run(move |db| db.create_task(task, lease)).await
    }

    async fn get(&self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        let key = key.clone();
        self.worker.run(move |db| db.get_task(&key)).await
    }

    async fn cancel(&self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        let key = key.clone();
        self.worker.run(move |db| db.cancel_task(&key)).await
    }

    async fn respond(
        &self,
        key: &TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> Result<Option<Responded>, StoreError> {
        let key = key.clone();
        self.worker
            .run(move |db| db.respond_task(&key, answers))
            .await
    }

    async fn renew(
        &self,
        lease: &TaskLease,
        duration: Duration,
        report: Option<TaskReport>,
    ) -> Result<TaskSignals, StoreError> {
        let lease = lease.clone();
        self.worker
            .run(move |db| db.renew_task(&lease, duration, report))
            .await
    }

    async fn ask(&self, lease: &TaskLease, questions: Asks) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.worker
            .run(move |db| db.ask_task(&lease, questions))
            .await
    }

    async fn finish(&self, lease: &TaskLease, ending: TaskEnding) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.worker
            .run(move |db| db.finish_task(&lease, ending))
            .await
    }

    fn changed(&self, lease: &TaskLease) -> impl Future<Output = ()> + Send {
        // Subscribed now, not when first polled: a change from here on is seen.
        let armed = self.holders.subscribe(lease);
        async move {
            if let Some(mut signal) = armed {
                // A later stamp, or the channel closed (the task ended or was lost): either
                // way, time to renew and look.
                let _ = signal.changed().await;
            }
        }
    }

    async fn sweep(&self) -> Result<usize, StoreError> {
        self.worker.run(|db| db.sweep_tasks()).await
    }
}

impl Db {
    pub(super) fn create_task(
        &mut self,
        task: NewTask,
        lease: Duration,
    ) -> Result<Created, StoreError> {
        self.in_tasks(|tx| {
            let key = task.key.clone();
            if tx.live(&key)?.is_some() {
                return Err(StoreError::unavailable("a task with this id already exists").into());
            }
            let record = TaskRecord::created(task, instant(tx.now));
            let saved = Saved::of(&record)?;
            tx.make_room(key.principal(), saved.bytes)?;
            let token = uuid::Uuid::new_v4().as_u128();
            let expires_at = tx.now.saturating_add(ms(lease));
            tx.transaction
                .prepare_cached(
                    "INSERT INTO carmy_tasks \
                     (principal, id, record, token, expires_at, signal, bytes) \
                     VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6)",
                )?
                .execute((
                    key.principal(),
                    key.id().as_str(),
                    &saved.text,
                    &token.to_be_bytes()[..],
                    expires_at,
                    saved.bytes,
                ))?;
            let lease = TaskLease::new(key, token);
            tx.wakes.push(Wake::Hold {
                lease: lease.clone(),
                expires_at,
                stamp: 0,
            });
            Ok(Created::new(lease, record))
        })
    }

    pub(super) fn get_task(&mut self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        self.in_tasks(|tx| Ok(tx.live(key)?.map(|row| row.record)))
    }

    pub(super) fn cancel_task(&mut self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        self.in_tasks(|tx| {
            let Some(mut row) = tx.live(key)? else {
                return Ok(None);
            };
            if !row.record.status.is_terminal() && !row.record.cancel_requested {
                row.record.cancel_requested = true;
                row.record.updated_at = instant(tx.now);
                let saved = Saved::of(&row.record)?;
                tx.save(key, &mut row, &saved, true)?;
            }
            Ok(Some(row.record))
        })
    }

    pub(super) fn respond_task(
        &mut self,
        key: &TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> Result<Option<Responded>, StoreError> {
        self.in_tasks(|tx| {
            let Some(mut row) = tx.live(key)? else {
                return Ok(None);
            };
            let responded = row.record.take_answers(answers, instant(tx.now));
            if !responded.accepted.is_empty() {
                let saved = Saved::of(&row.record)?;
                if !tx.fits(key.principal(), saved.bytes - row.bytes)? {
                    return Err(StoreError::Full(
                        "the answers do not fit in what this caller may keep".into(),
                    )
                    .into());
                }
                tx.save(key, &mut row, &saved, true)?;
            }
            Ok(Some(responded))
        })
    }

    pub(super) fn renew_task(
        &mut self,
        lease: &TaskLease,
        duration: Duration,
        report: Option<TaskReport>,
    ) -> Result<TaskSignals, StoreError> {
        self.in_tasks(|tx| {
            let key = lease.key();
            let mut row = tx.held(lease)?;
            let signals = row.record.signals();
            row.expires_at = tx.now.saturating_add(ms(duration));
            match report {
                Some(report) => {
                    row.record.apply(report, instant(tx.now));
                    let saved = Saved::of(&row.record)?;
                    tx.save(key, &mut row, &saved, false)?;
                }
                None => {
                    // Nothing in the record changes: the lease's expiry alone is written.
                    tx.transaction
                        .prepare_cached(
                            "UPDATE carmy_tasks SET expires_at = ?3 \
                             WHERE principal = ?1 AND id = ?2",
                        )?
                        .execute((key.principal(), key.id().as_str(), row.expires_at))?;
                }
            }
            tx.wakes.push(Wake::Hold {
                lease: lease.clone(),
                expires_at: row.expires_at,
                stamp: row.signal,
            });
            Ok(signals)
        })
    }

    pub(super) fn ask_task(
        &mut self,
        lease: &TaskLease,
        questions: Asks,
    ) -> Result<(), StoreError> {
        self.in_tasks(|tx| {
            let key = lease.key();
            let mut row = tx.held(lease)?;
            row.record.set_questions(questions, instant(tx.now));
            let saved = Saved::of(&row.record)?;
            if !tx.fits(key.principal(), saved.bytes - row.bytes)? {
                return Err(StoreError::Full(
                    "the questions do not fit in what this caller may keep".into(),
                )
                .into());
            }
            tx.save(key, &mut row, &saved, false)
        })
    }

    pub(super) fn finish_task(
        &mut self,
        lease: &TaskLease,
        ending: TaskEnding,
    ) -> Result<(), StoreError> {
        self.in_tasks(|tx| {
            let key = lease.key();
            let mut row = tx.held(lease)?;
            let size = outcome::encode(ending.outcome())?.len();
            let now = instant(tx.now);
            let mut ended = row.record.clone();
            ended.end(ending.clone(), now);
            let mut saved = Saved::of(&ended)?;
            let fits = size <= tx.options.max_task_outcome_bytes
                && tx.fits(key.principal(), saved.bytes - row.bytes)?;
            if !fits {
                // The call ran: its owner is told so, even if its outcome cannot be kept.
                ended = row.record.clone();
                ended.end(
                    TaskEnding::new(outcome::not_kept(ending.outcome(), size)),
                    now,
                );
                saved = Saved::of(&ended)?;
            }
            row.record = ended;
            row.token = None;
            row.expires_at = tx.now.saturating_add(ms(row.record.ttl));
            tx.save(key, &mut row, &saved, false)?;
            tx.wakes.push(Wake::Release(key.clone()));
            Ok(())
        })
    }

    /// Settles every lease that ran out and forgets every task past its ttl; how many were
    /// forgotten.
    pub(super) fn sweep_tasks(&mut self) -> Result<usize, StoreError> {
        self.in_tasks(|tx| tx.settle_due(None))
    }

    /// Looks for what other processes wrote for the tasks held here, and wakes their holders;
    /// whether any was woken.
    pub(super) fn poll_tasks(&mut self) -> Result<bool, StoreError> {
        let version = data_version(self.connection())?;
        if version == self.poll.data_version {
            return Ok(false);
        }
        // Read after the version: a commit between the two is seen now, and its version change
        // only makes the next poll look once more.
        let signalled = self
            .connection()
            .prepare_cached("SELECT principal, id, signal FROM carmy_tasks WHERE signal > ?1")
            .and_then(|mut statement| {
                statement
                    .query_map([self.poll.stamp], |row| {
                        Ok((
                            row.get::<_, String>(0)?,
                            row.get::<_, String>(1)?,
                            row.get::<_, i64>(2)?,
                        ))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(Failure::from)?;
        self.poll.data_version = version;
        let mut woken = false;
        for (principal, id, stamp) in signalled {
            woken |= self
                .holders
                .signal(&TaskKey::new(Some(&principal), id.as_str()), stamp);
            self.poll.stamp = self.poll.stamp.max(stamp);
        }
        Ok(woken)
    }

    /// Runs `job` in one `BEGIN IMMEDIATE` transaction, then wakes whom it says.
    fn in_tasks<T>(&mut self, job: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T, StoreError> {
        let options = *self.options();
        let holders = Arc::clone(&self.holders);
        let transaction = self
            .connection_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(Failure::from)?;
        let mut tx = Tx {
            transaction,
            options,
            now: now_ms(),
            wakes: Vec::new(),
        };
        let result = job(&mut tx);
        let Tx {
            transaction, wakes, ..
        } = tx;
        match &result {
            // A refusal is committed too: what was settled on the way stays settled (every
            // call checks before it writes, so nothing else was).
            Ok(_) | Err(Failure::Store(_)) => transaction.commit().map_err(Failure::from)?,
            // Anything else rolls back (the transaction dropped), and wakes nobody.
            Err(_) => return result.map_err(StoreError::from),
        }
        for wake in wakes {
            holders.apply(wake);
        }
        result.map_err(StoreError::from)
    }
}

/// A task transaction: what it runs in, and whom it wakes once committed.
struct Tx<'a> {
    transaction: Transaction<'a>,
    options: SqliteStoreOptions,
    now: i64,
    wakes: Vec<Wake>,
}

/// A task's row, its record read.
struct Row {
    record: TaskRecord,
    /// The holder's lease token, while the task runs.
    token: Option<u128>,
    /// While it runs, when the lease runs out; once it ended, when it is forgotten.
    expires_at: i64,
    signal: i64,
    bytes: i64,
}

const COLUMNS: &str = "record, token, expires_at, signal, bytes";

/// [`COLUMNS`] as read, before the record is decoded.
type Columns = (String, Option<Vec<u8>>, i64, i64, i64);

impl Row {
    /// The row of [`COLUMNS`], from the column at `first` on.
    fn read(row: &SqlRow<'_>, first: usize) -> rusqlite::Result<Columns> {
        Ok((
            row.get(first)?,
            row.get(first + 1)?,
            row.get(first + 2)?,
            row.get(first + 3)?,
            row.get(first + 4)?,
        ))
    }

    fn decode((text, token, expires_at, signal, bytes): Columns) -> Result<Self> {
        let token = token
            .map(|token| {
                <[u8; 16]>::try_from(token.as_slice())
                    .map(u128::from_be_bytes)
                    .map_err(|_| Failure::Invalid("a task's lease token is not 16 bytes".into()))
            })
            .transpose()?;
        Ok(Self {
            record: task_record::decode(&text)?,
            token,
            expires_at,
            signal,
            bytes,
        })
    }
}

/// A record as saved, and what its row then counts for.
struct Saved {
    text: String,
    bytes: i64,
}

impl Saved {
    fn of(record: &TaskRecord) -> Result<Self> {
        let text = task_record::encode(record)?;
        let bytes = count(ROW_BYTES + text.len());
        Ok(Self { text, bytes })
    }
}

impl Tx<'_> {
    fn load(&self, key: &TaskKey) -> Result<Option<Row>> {
        let read = self
            .transaction
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM carmy_tasks WHERE principal = ?1 AND id = ?2"
            ))?
            .query_row((key.principal(), key.id().as_str()), |row| {
                Row::read(row, 0)
            })
            .optional()?;
        read.map(Row::decode).transpose()
    }

    /// The task `key` names as it stands now: a lease that ran out settled as lost, a task past
    /// its ttl forgotten.
    fn live(&mut self, key: &TaskKey) -> Result<Option<Row>> {
        let Some(mut row) = self.load(key)? else {
            return Ok(None);
        };
        if row.token.is_some() && row.expires_at <= self.now {
            self.settle_lost(key, &mut row)?;
        }
        if row.expires_at <= self.now {
            self.transaction
                .prepare_cached("DELETE FROM carmy_tasks WHERE principal = ?1 AND id = ?2")?
                .execute((key.principal(), key.id().as_str()))?;
            return Ok(None);
        }
        Ok(Some(row))
    }

    /// The task `lease` holds; `LeaseLost` if it holds nothing (any more).
    fn held(&mut self, lease: &TaskLease) -> Result<Row> {
        match self.live(lease.key())? {
            Some(row) if row.token == Some(lease.token()) => Ok(row),
            _ => {
                self.wakes.push(Wake::Lost(lease.clone()));
                Err(StoreError::LeaseLost.into())
            }
        }
    }

    /// Ends the task of a lease that ran out: `failed`, kept for its ttl from the lease's
    /// expiry (as if it ended then). Its holder, wherever it is, is told.
    fn settle_lost(&mut self, key: &TaskKey, row: &mut Row) -> Result<()> {
        let ending = TaskEnding::lost(row.record.execution_id.clone());
        row.record.end(ending, instant(self.now));
        row.token = None;
        row.expires_at = row.expires_at.saturating_add(ms(row.record.ttl));
        let saved = Saved::of(&row.record)?;
        self.save(key, row, &saved, true)?;
        self.wakes.push(Wake::Release(key.clone()));
        Ok(())
    }

    /// Writes `row` back with its record `saved`; with `signal`, under a new stamp, for its
    /// holder to act on.
    fn save(&mut self, key: &TaskKey, row: &mut Row, saved: &Saved, signal: bool) -> Result<()> {
        let stamp = if signal {
            let stamp: i64 = self
                .transaction
                .prepare_cached(
                    "UPDATE carmy_task_stamp SET stamp = stamp + 1 WHERE id = 0 RETURNING stamp",
                )?
                .query_row([], |row| row.get(0))?;
            Some(stamp)
        } else {
            None
        };
        let token = row.token.map(u128::to_be_bytes);
        self.transaction
            .prepare_cached(
                "UPDATE carmy_tasks SET record = ?3, token = ?4, expires_at = ?5, bytes = ?6, \
                 signal = coalesce(?7, signal) WHERE principal = ?1 AND id = ?2",
            )?
            .execute((
                key.principal(),
                key.id().as_str(),
                &saved.text,
                token.as_ref().map(|token| &token[..]),
                row.expires_at,
                saved.bytes,
                stamp,
            ))?;
        row.bytes = saved.bytes;
        if let Some(stamp) = stamp {
            row.signal = stamp;
            self.wakes.push(Wake::Signal(key.clone(), stamp));
        }
        Ok(())
    }

    /// `principal`'s tasks and their bytes.
    fn share(&self, principal: &str) -> Result<(i64, i64)> {
        Ok(self
            .transaction
            .prepare_cached("SELECT tasks, bytes FROM carmy_task_shares WHERE principal = ?1")?
            .query_row([principal], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?
            .unwrap_or((0, 0)))
    }

    /// Every principal's tasks and their bytes.
    fn totals(&self) -> Result<(i64, i64)> {
        Ok(self
            .transaction
            .prepare_cached("SELECT tasks, bytes FROM carmy_task_totals WHERE id = 0")?
            .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?)
    }

    /// Whether `extra` more bytes fit in `principal`'s share and in the total (fewer always do).
    fn fits(&self, principal: &str, extra: i64) -> Result<bool> {
        if extra <= 0 {
            return Ok(true);
        }
        let (_, share) = self.share(principal)?;
        let (_, total) = self.totals()?;
        Ok(
            share.saturating_add(extra) <= count(self.options.max_task_bytes_per_principal)
                && total.saturating_add(extra) <= count(self.options.max_task_bytes),
        )
    }

    /// Whether a task of `bytes` may be created for `principal`: its share and the totals have
    /// room once what is due is settled and forgotten. Nobody's live task is forgotten to make
    /// room.
    fn make_room(&mut self, principal: &str, bytes: i64) -> Result<()> {
        let options = self.options;
        let full_share = |(tasks, weight): (i64, i64)| {
            tasks >= count(options.max_tasks_per_principal)
                || weight.saturating_add(bytes) > count(options.max_task_bytes_per_principal)
        };
        if full_share(self.share(principal)?) {
            // Only now is the principal's backlog worth a look: most creates never pay for it.
            self.settle_due(Some(principal))?;
            if full_share(self.share(principal)?) {
                return Err(StoreError::Full(
                    "too many tasks are kept for this caller; retry once older ones expire".into(),
                )
                .into());
            }
        }
        let full_totals = |(tasks, weight): (i64, i64)| {
            tasks >= count(options.max_tasks)
                || weight.saturating_add(bytes) > count(options.max_task_bytes)
        };
        if full_totals(self.totals()?) {
            self.settle_due(None)?;
            if full_totals(self.totals()?) {
                return Err(StoreError::Full(
                    "too many tasks are kept; retry once older ones expire".into(),
                )
                .into());
            }
        }
        Ok(())
    }

    /// Settles the leases that ran out and forgets the tasks past their ttl, of `principal` or
    /// of everyone; how many were forgotten.
    fn settle_due(&mut self, principal: Option<&str>) -> Result<usize> {
        let filter = if principal.is_some() {
            " AND principal = ?2"
        } else {
            ""
        };
        // Settling changes the record, so it is done here, one row at a time; forgetting is
        // one statement.
        let due = {
            let mut statement = self.transaction.prepare_cached(&format!(
                "SELECT principal, id, {COLUMNS} FROM carmy_tasks \
                 WHERE token IS NOT NULL AND expires_at <= ?1{filter}"
            ))?;
            let read = |row: &SqlRow<'_>| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    Row::read(row, 2)?,
                ))
            };
            match principal {
                Some(principal) => statement
                    .query_map((self.now, principal), read)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
                None => statement
                    .query_map([self.now], read)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
            }
        };
        for (owner, id, read) in due {
            let key = TaskKey::new(Some(&owner), id.as_str());
            let mut row = Row::decode(read)?;
            self.settle_lost(&key, &mut row)?;
        }
        let mut forget = self.transaction.prepare_cached(&format!(
            "DELETE FROM carmy_tasks WHERE token IS NULL AND expires_at <= ?1{filter}"
        ))?;
        let forgotten = match principal {
            Some(principal) => forget.execute((self.now, principal))?,
            None => forget.execute([self.now])?,
        };
        Ok(forgotten)
    }
}

/// The instant `ms` milliseconds after the epoch, as records keep it.
fn instant(ms: i64) -> std::time::SystemTime {
    task_record::at(u64::try_from(ms).unwrap_or(0))
}
