//! Tasks ([`TaskStore`]) in the database: one row per task, the record's rules applied in Rust,
//! leases and retention on the server's clock, and the holder woken by `NOTIFY`.
//!
//! # A row per task
//!
//! A row of `tasks` keeps the task's record as `crate::task_record`'s text, and beside it what
//! the server must decide on without reading the record: the holder's lease token (`NULL` once
//! the task ended), one `expires_at` (the lease's expiry while it runs, the end of its
//! retention once it ended, so one index finds everything due), `signal`, a count of the
//! writes its holder must act on, and what the row counts for in its principal's share.
//!
//! # One short transaction per call
//!
//! Every call that may change a task runs at READ COMMITTED in one transaction: it locks the
//! task's row (`SELECT ... FOR UPDATE`), settles what is due by the server's clock (a lease
//! that ran out ends the task as [`TaskEnding::lost`], kept for its `ttl` from the lease's
//! expiry; a task past its retention is forgotten), applies the rule of [`TaskRecord`] the call
//! stands for (`take_answers`, `set_questions`, `apply`, `end`, `signals`) to the record it
//! read, and writes it back. The lock makes each call see the one before it: a renewal never
//! loses an answer delivered meanwhile, and a lost lease is settled once. A holder's call
//! (`renew`, `ask`, `finish`) applies only while its token is the row's, and fails with
//! `LeaseLost` otherwise, after committing what it settled. Another owner's key names another
//! row (principal and id are the key), so it finds nothing.
//!
//! A read (`get`) that finds nothing due takes no lock: it is one statement, and the owner's
//! client reads far more often than anyone writes (every `pollInterval`), so it should not
//! write a row lock into the row each time. A read that finds the task due settles it as above.
//!
//! # Locks and bounds
//!
//! A task's row first, then its principal's `task_shares` row, then its `task_totals` slot
//! (taken by the trigger that counts a row, or by the check of a share before it grows); the
//! sweep takes its rows with `SKIP LOCKED`, then the shares and slots in order (see `sql`).
//! Task calls touch no claim, record or collection, so they never wait on those, nor those on
//! them. The counts are kept by a trigger, in the statement that changes the row, as the
//! claims' are, and checked the same way: a principal's bounds are exact (its share's row is
//! locked from the check to the commit by every call that adds to it), the totals are read
//! without a lock and may be passed by the creates committing at the same instant. A create
//! that finds its principal full settles the principal's due tasks first, one that finds the
//! totals full sweeps a batch first; still full is `Full`, and nothing is forgotten early to
//! make room. Answers and questions that would grow a share past its bound are refused
//! (`Full`); an outcome too large, or that does not fit, is kept as a note that the call ran.
//!
//! # Waking the holder
//!
//! A cancel request and accepted answers add to the row's `signal`; a trigger announces the
//! change at commit (`NOTIFY`, under the task's tag), and the store that wrote it wakes its own
//! waiters at once. [`changed`](TaskStore::changed) subscribes to the task's tag when called,
//! so what is written after the call wakes it. It also polls the row's `signal`, compared with
//! what the holder last read through this store (at its creation or its last renewal): every
//! [`POLL_LISTENING`] while the listener is connected, else every [`FIRST_POLL`] at first,
//! doubling up to [`LONGEST_POLL`]. A task no longer held by the lease resolves it at once; a
//! poll that fails does not (the database is away, and renewing now would fail too), so a holder
//! never spins against a server that is down.

use std::{collections::BTreeMap, future::Future, sync::Arc, time::Duration};

use carmy_core::{
    Asks, Created, NewTask, Responded, StoreError, TaskEnding, TaskKey, TaskLease, TaskRecord,
    TaskReport, TaskSignals, TaskStore,
};
use deadpool_postgres::Object;
use serde_json::Value;
use tokio::sync::watch;

use super::{
    PostgresStore, Shared,
    connection::{Database, millis},
    error::Failure,
    options::PostgresStoreOptions,
    sql::Sql,
    sweep::{BATCH, Scope},
    task_rows::{
        apply_settled, count, found, held, hold, instant, key_params, room, settle_due, stored,
        sweep_batch, write,
    },
    waiters::task_tag,
};
use crate::outcome;

/// The first pause of a holder's poll while the listener is away; it doubles up to
/// [`LONGEST_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(50);

const LONGEST_POLL: Duration = Duration::from_millis(500);

/// The pause between a holder's polls while the listener would hear the change announced.
const POLL_LISTENING: Duration = Duration::from_secs(2);

const FULL: &str = "too many tasks are kept for this caller; retry once older ones expire";

/// Creates `task` held by `token`; `None` when the totals are full and no sweep was made for
/// room yet (`room_made`), which the caller makes in a transaction of its own.
async fn create(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    task: &NewTask,
    lease: Duration,
    token: u128,
    room_made: bool,
) -> Result<Option<Created>, Failure> {
    let (principal, id) = key_params(&task.key);
    let transaction = connection.transaction().await?;
    let clock = transaction.prepare_cached(&sql.task_now_and_totals).await?;
    let insert = transaction.prepare_cached(&sql.task_insert).await?;
    let share = transaction.prepare_cached(&sql.task_share).await?;
    let row = transaction.query_one(&clock, &[]).await?;
    let (now_ms, tasks, weight): (i64, i64, i64) =
        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    let record = TaskRecord::created(task.clone(), instant(now_ms));
    let (text, bytes) = stored(&record)?;
    if tasks >= count(options.tasks.max)
        || weight.saturating_add(bytes) > count(options.tasks.max_bytes)
    {
        transaction.rollback().await?;
        if room_made {
            return Err(StoreError::Full(FULL.into()).into());
        }
        return Ok(None);
    }
    let inserted = transaction
        .execute(
            &insert,
            &[
                &principal,
                &id,
                &text,
                &&token.to_be_bytes()[..],
                &millis(lease),
                &bytes,
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(StoreError::unavailable("a task with this id already exists").into());
    }
    // Counted, and the share locked by the trigger until the commit: the check sees this task
    // and every other committed one, and no other create of the principal adds meanwhile.
    let over = |(held, weight): (i64, i64)| {
        held > count(options.tasks.max_per_principal)
            || weight > count(options.tasks.max_bytes_per_principal)
    };
    let read_share = async || -> Result<(i64, i64), Failure> {
        let row = transaction.query_one(&share, &[&principal]).await?;
        Ok((row.try_get(0)?, row.try_get(1)?))
    };
    let mut held = read_share().await?;
    if over(held) {
        // Only now is the principal's backlog worth a look.
        settle_due(&transaction, sql, Scope::Principal(principal)).await?;
        held = read_share().await?;
    }
    if over(held) {
        // Undone by deleting the row (its trigger takes the counts back); what was settled on
        // the way stays settled.
        apply_settled(&transaction, sql, &[], (&[principal], &[id])).await?;
        transaction.commit().await?;
        return Err(StoreError::Full(FULL.into()).into());
    }
    transaction.commit().await?;
    Ok(Some(Created::new(
        TaskLease::new(task.key.clone(), token),
        record,
    )))
}

async fn get(
    connection: &mut Object,
    sql: &Sql,
    key: &TaskKey,
) -> Result<Option<TaskRecord>, Failure> {
    let (principal, id) = key_params(key);
    let read = connection.prepare_cached(&sql.task_read).await?;
    let Some(row) = connection.query_opt(&read, &[&principal, &id]).await? else {
        return Ok(None);
    };
    if !row.try_get::<_, bool>("due")? {
        return Ok(Some(found(&row)?.record));
    }
    let transaction = connection.transaction().await?;
    let found = hold(&transaction, sql, key).await?;
    transaction.commit().await?;
    Ok(found.map(|found| found.record))
}

/// The task after the cancel, and whether it asked for one (its holder must act).
async fn cancel(
    connection: &mut Object,
    sql: &Sql,
    key: &TaskKey,
) -> Result<(Option<TaskRecord>, bool), Failure> {
    let transaction = connection.transaction().await?;
    let Some(mut found) = hold(&transaction, sql, key).await? else {
        transaction.commit().await?;
        return Ok((None, false));
    };
    let asked = !found.record.status.is_terminal() && !found.record.cancel_requested;
    if asked {
        found.record.cancel_requested = true;
        found.record.updated_at = found.now;
        let (text, bytes) = stored(&found.record)?;
        write(&transaction, sql, &text, bytes, key, 1).await?;
    }
    transaction.commit().await?;
    Ok((Some(found.record), asked))
}

/// What was made of `answers`, and whether any was taken (its holder must act).
async fn respond(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    key: &TaskKey,
    answers: BTreeMap<String, Value>,
) -> Result<(Option<Responded>, bool), Failure> {
    let transaction = connection.transaction().await?;
    let Some(mut found) = hold(&transaction, sql, key).await? else {
        transaction.commit().await?;
        return Ok((None, false));
    };
    let responded = found.record.take_answers(answers, found.now);
    let taken = !responded.accepted.is_empty();
    if taken {
        let (text, bytes) = stored(&found.record)?;
        let growth = bytes - found.bytes;
        if growth > 0 && !room(&transaction, sql, options, key_params(key).0, growth).await? {
            // Rolled back: nothing is taken.
            return Err(StoreError::Full(
                "the answers do not fit in what this caller may keep".into(),
            )
            .into());
        }
        write(&transaction, sql, &text, bytes, key, 1).await?;
    }
    transaction.commit().await?;
    Ok((Some(responded), taken))
}

/// The holder's signals, and the row's `signal` they stand for.
async fn renew(
    connection: &mut Object,
    sql: &Sql,
    lease: &TaskLease,
    duration: Duration,
    report: Option<TaskReport>,
) -> Result<(TaskSignals, i64), Failure> {
    let (principal, id) = key_params(lease.key());
    let transaction = connection.transaction().await?;
    let (transaction, mut found) = held(transaction, sql, lease).await?;
    let signals = found.record.signals();
    let (text, bytes) = match report {
        Some(report) => {
            found.record.apply(report, found.now);
            let (text, bytes) = stored(&found.record)?;
            (Some(text), Some(bytes))
        }
        None => (None, None),
    };
    let renew = transaction.prepare_cached(&sql.task_renew).await?;
    transaction
        .execute(&renew, &[&principal, &id, &millis(duration), &text, &bytes])
        .await?;
    transaction.commit().await?;
    Ok((signals, found.signal))
}

async fn ask(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    lease: &TaskLease,
    questions: Asks,
) -> Result<(), Failure> {
    let transaction = connection.transaction().await?;
    let (transaction, mut found) = held(transaction, sql, lease).await?;
    found.record.set_questions(questions, found.now);
    let (text, bytes) = stored(&found.record)?;
    let growth = bytes - found.bytes;
    let principal = key_params(lease.key()).0;
    if growth > 0 && !room(&transaction, sql, options, principal, growth).await? {
        return Err(StoreError::Full(
            "the questions do not fit in what this caller may keep".into(),
        )
        .into());
    }
    write(&transaction, sql, &text, bytes, lease.key(), 0).await?;
    transaction.commit().await?;
    Ok(())
}

async fn finish(
    connection: &mut Object,
    sql: &Sql,
    options: &PostgresStoreOptions,
    lease: &TaskLease,
    ending: TaskEnding,
) -> Result<(), Failure> {
    // Measured before the transaction: no lock is held while a large outcome is written out.
    let size = outcome::encode(ending.outcome())?.len();
    let (principal, id) = key_params(lease.key());
    let transaction = connection.transaction().await?;
    let (transaction, mut found) = held(transaction, sql, lease).await?;
    let fits = size <= options.tasks.max_outcome_bytes
        && room(&transaction, sql, options, principal, count(size)).await?;
    let ending = if fits {
        ending
    } else {
        // The call ran: its owner is told so, even if its outcome cannot be kept.
        TaskEnding::new(outcome::not_kept(ending.outcome(), size))
    };
    found.record.end(ending, found.now);
    let (text, bytes) = stored(&found.record)?;
    let finish = transaction.prepare_cached(&sql.task_finish).await?;
    transaction
        .execute(
            &finish,
            &[&principal, &id, &text, &bytes, &millis(found.record.ttl)],
        )
        .await?;
    transaction.commit().await?;
    Ok(())
}

/// The row's `signal` while `lease` holds the task (its lease not run out); `None` otherwise.
async fn signal(
    connection: &mut Object,
    sql: &Sql,
    lease: &TaskLease,
) -> Result<Option<i64>, Failure> {
    let (principal, id) = key_params(lease.key());
    let statement = connection.prepare_cached(&sql.task_signal).await?;
    let row = connection
        .query_opt(
            &statement,
            &[&principal, &id, &&lease.token().to_be_bytes()[..]],
        )
        .await?;
    row.map(|row| row.try_get(0))
        .transpose()
        .map_err(Into::into)
}

impl Shared {
    /// Settles every lost lease and forgets every task past its retention, in batches; how
    /// many were forgotten.
    pub(super) async fn sweep_tasks(&self) -> Result<usize, Failure> {
        let mut forgotten = 0;
        loop {
            let (due, gone) = on_connection!(&self.db, "sweeping tasks", |connection| {
                sweep_batch(&mut connection, &self.db.sql)
            })?;
            forgotten += usize::try_from(gone).unwrap_or(usize::MAX);
            if due < usize::try_from(BATCH).unwrap_or(usize::MAX) {
                return Ok(forgotten);
            }
        }
    }

    /// Forgets `token` here once the store says it holds nothing.
    fn holding<T>(&self, token: u128, answer: Result<T, Failure>) -> Result<T, StoreError> {
        if let Err(Failure::Store(StoreError::LeaseLost)) = &answer {
            self.holders.forget(token);
        }
        Ok(answer?)
    }
}

/// Resolves once the holder of `lease` may have something to act on: `told` (this process
/// wrote it, or the server announced it), a poll that finds `signal` past what the holder last
/// read, or the task no longer held by the lease.
async fn watch(shared: Arc<Shared>, lease: TaskLease, mut told: watch::Receiver<()>) {
    let token = lease.token();
    let db = &shared.db;
    let poll = async || {
        on_connection!(db, "polling a task", |connection| {
            signal(&mut connection, &db.sql, &lease)
        })
    };
    // A lease this store does not hold (never did, or gave up): the task as it is now is what
    // the holder has read.
    let mut baseline = None;
    if shared.holders.last(token).is_none() {
        match poll().await {
            Ok(None) => return,
            Ok(Some(signal)) => baseline = Some(signal),
            Err(_) => {}
        }
    }
    let mut backoff = FIRST_POLL;
    loop {
        let pause = if shared.waiters.listening() {
            POLL_LISTENING
        } else {
            backoff
        };
        tokio::select! {
            _ = told.changed() => return,
            () = tokio::time::sleep(pause) => {}
        }
        backoff = (backoff * 2).min(LONGEST_POLL);
        match poll().await {
            Ok(None) => return,
            Ok(Some(signal)) => match shared.holders.last(token).or(baseline) {
                Some(seen) if seen == signal => {}
                Some(_) => return,
                None => baseline = Some(signal),
            },
            // Nothing can be read now, and a renewal would fail as well: it is not time yet.
            Err(_) => {}
        }
    }
}

/// Tasks live in the same schema as the claims, for every replica to read, answer and cancel
/// (see "Tasks" in the type's docs).
impl TaskStore for PostgresStore {
    async fn create(&self, task: NewTask, lease: Duration) -> Result<Created, StoreError> {
        let shared = &self.shared;
        let db = &shared.db;
        let token = uuid::Uuid::new_v4().as_u128();
        let attempt = async |room_made| {
            on_connection!(db, "creating a task", |connection| create(
                &mut connection,
                &db.sql,
                &db.options,
                &task,
                lease,
                token,
                room_made,
            ))
        };
        let created = match attempt(false).await? {
            Some(created) => created,
            None => {
                // The totals are full: make room as the sweep does (one batch, in its own
                // transaction), then create once more; still full is `Full`.
                on_connection!(db, "sweeping tasks for room", |connection| {
                    sweep_batch(&mut connection, &db.sql)
                })?;
                attempt(true)
                    .await?
                    .ok_or_else(|| StoreError::Full(FULL.into()))?
            }
        };
        shared.holders.heard(token, 0, lease);
        Ok(created)
    }

    async fn get(&self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        let db = &self.shared.db;
        Ok(on_connection!(db, "reading a task", |connection| get(
            &mut connection,
            &db.sql,
            key
        ))?)
    }

    async fn cancel(&self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        let db = &self.shared.db;
        let (record, asked) = on_connection!(db, "cancelling a task", |connection| cancel(
            &mut connection,
            &db.sql,
            key
        ))?;
        if asked {
            self.shared.waiters.wake(&task_tag(key));
        }
        Ok(record)
    }

    async fn respond(
        &self,
        key: &TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> Result<Option<Responded>, StoreError> {
        let db = &self.shared.db;
        let (responded, taken) = on_connection!(db, "answering a task", |connection| respond(
            &mut connection,
            &db.sql,
            &db.options,
            key,
            answers,
        ))?;
        if taken {
            self.shared.waiters.wake(&task_tag(key));
        }
        Ok(responded)
    }

    async fn renew(
        &self,
        lease: &TaskLease,
        duration: Duration,
        report: Option<TaskReport>,
    ) -> Result<TaskSignals, StoreError> {
        let shared = &self.shared;
        let db = &shared.db;
        let answer = on_connection!(db, "renewing a task", |connection| renew(
            &mut connection,
            &db.sql,
            lease,
            duration,
            report,
        ));
        let (signals, signal) = shared.holding(lease.token(), answer)?;
        shared.holders.heard(lease.token(), signal, duration);
        Ok(signals)
    }

    async fn ask(&self, lease: &TaskLease, questions: Asks) -> Result<(), StoreError> {
        let db = &self.shared.db;
        let answer = on_connection!(db, "asking in a task", |connection| ask(
            &mut connection,
            &db.sql,
            &db.options,
            lease,
            questions,
        ));
        self.shared.holding(lease.token(), answer)
    }

    async fn finish(&self, lease: &TaskLease, ending: TaskEnding) -> Result<(), StoreError> {
        let shared = &self.shared;
        let db = &shared.db;
        let answer = on_connection!(db, "finishing a task", |connection| finish(
            &mut connection,
            &db.sql,
            &db.options,
            lease,
            ending,
        ));
        shared.holding(lease.token(), answer)?;
        shared.holders.forget(lease.token());
        Ok(())
    }

    fn changed(&self, lease: &TaskLease) -> impl Future<Output = ()> + Send {
        // Subscribed now, not when first polled: what is written from here on wakes it.
        let told = self.shared.waiters.subscribe(&task_tag(lease.key()));
        watch(Arc::clone(&self.shared), lease.clone(), told)
    }

    async fn sweep(&self) -> Result<usize, StoreError> {
        Ok(self.shared.sweep_tasks().await?)
    }
}
