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
use rusqlite::TransactionBehavior;
use serde_json::Value;

use super::{
    SqliteStore,
    db::Db,
    failure::{Failure, Result},
    integers::{ms, now_ms},
    task_holders::Wake,
    task_poll::data_version,
    task_rows::{Saved, Tx, instant},
};
use crate::outcome;

/// Tasks live in the same file as the claims and the records: one file, one thread, and any
/// process that opens the file reads, answers and cancels the tasks the others run. Bounded as
/// `MemoryTaskStore` is, with the same defaults
/// ([`SqliteStoreOptions::tasks`](super::options::SqliteStoreOptions::tasks)).
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
            let fits = size <= tx.options.tasks.max_outcome_bytes
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
