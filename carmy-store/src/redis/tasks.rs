//! [`TaskStore`] for [`RedisStore`]: tasks on the server, shared by every replica.
//!
//! **Read, rule, compare-and-set.** What a renewal, an answer, a cancel or an ending change
//! in a record are `carmy_core`'s rules, on [`TaskRecord`]; they are not written twice, once
//! in Lua. So every call reads the task (`task_read`: its record, its version, its holder and
//! Redis's clock, of one moment), applies the rule in Rust, and writes the record back with
//! `task_write`, which applies it only if the task is still at the version read, and, for a
//! holder's call, still held by its token with its lease running, checks and writes in one
//! script. A write that finds the version moved on (another replica wrote in between) changes
//! nothing and says so; the call reads again and applies its rule to what it finds, up to
//! [`ATTEMPTS`] times. Every write moves the version on, so of two calls that read the same
//! version only one writes: no update is lost, and each rule sees the record whole.
//!
//! **Leases on Redis's clock.** A lease's end is an instant of the server's clock, as for
//! claims. A read that finds a lease run out settles it first, as [`TaskEnding::lost`]
//! applied in Rust and written by the same compare-and-set (`settle`: only a lease that ran
//! out at the version read), and then goes on with what it found; the write script refuses a
//! holder's or an owner's write to a task whose lease ran out since it was read, so that one
//! is settled first too. [`sweep`](TaskStore::sweep) settles the leases nobody looked at: the
//! running tasks are indexed by their lease's end.
//!
//! **A TTL on every key.** A running task's hash is kept until its lease's end plus its `ttl`
//! (each renewal moves both), an ended one for its `ttl` from its end: a lost lease ended when
//! it ran out, so the TTL it had while running is already the right one, whether or not anyone
//! settles it. The shares, their weights and the index of leases last as long as their last
//! member. Nothing is kept by a replica that died.
//!
//! **Bounds that stay true.** `MemoryTaskStore`'s, counted as the claims' are: sorted sets per
//! principal and in total, scored by when each task is forgotten, the very instant its TTL
//! ends, with their byte sums beside them; a create refuses (`Full`) rather than make room,
//! questions and answers that do not fit are refused, and an outcome that does not is kept as
//! a note that the call ran.
//!
//! **Sent again, applied once.** The connection sends a call again when it finds it dead (see
//! `link`); the answer to a write may have been lost after Redis applied it. Each attempt of a
//! write carries a fresh id, which the task remembers among its last few: sent again, the
//! write finds the version moved on (so it cannot apply again) and its own id there (so it
//! answers `done` rather than `stale`, and its caller returns what it wrote, instead of
//! reading again and applying its rule a second time: an answer delivered twice would come
//! back as ignored, a finish as a lost lease).

use std::{collections::BTreeMap, future::Future, sync::Arc, time::Duration, time::SystemTime};

use carmy_core::{
    Asks, Created, NewTask, Responded, StoreError, TaskEnding, TaskKey, TaskLease, TaskRecord,
    TaskReport, TaskSignals, TaskStore,
};
use serde_json::Value;

use super::{
    RedisStore, holders,
    keys::TaskNames,
    task_scripts::{After, Bound, By, CreateArgs, CreatedAs, Kept, Read, WriteArgs, Written},
};
use crate::{outcome, task_record};

/// How many times one call reads and writes a task that others keep writing first, before it
/// fails closed. Each lost race is another call's write applied: a task has few writers (its
/// holder, and the owner's cancel and answers), so a handful is plenty.
const ATTEMPTS: usize = 32;

/// The most leases run out that one sweep settles; the next sweep goes on.
const SWEPT: usize = 256;

/// What a task counts for besides its record: the other fields of its hash (its last writes'
/// ids among them), and its name in the hash, both shares, both weights and the lease index.
fn overhead(names: &TaskNames) -> usize {
    const FIELDS: usize = 512;
    FIELDS + 6 * names.task.len()
}

fn token_text(token: u128) -> String {
    format!("{token:032x}")
}

/// A fresh id for one attempt of a write.
fn op_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn unreadable(error: task_record::TaskFormError) -> StoreError {
    StoreError::unavailable(format!("a kept task cannot be used: {error}"))
}

fn encode(record: &TaskRecord) -> Result<String, StoreError> {
    task_record::encode(record).map_err(unreadable)
}

fn busy() -> StoreError {
    StoreError::unavailable(format!(
        "the task changed {ATTEMPTS} times while this call tried to write it; retry"
    ))
}

/// A task as read: its record, and what the write that follows compares.
struct Found {
    record: TaskRecord,
    version: u64,
    signals: u64,
    /// Its holder's token and when the lease ends, while it runs.
    holder: Option<(String, u64)>,
    /// Redis's clock when it was read (ms since the epoch).
    now: u64,
}

impl Found {
    fn of(kept: Kept) -> Result<Self, StoreError> {
        Ok(Self {
            record: task_record::decode(&kept.record).map_err(unreadable)?,
            version: kept.version,
            signals: kept.signals,
            holder: kept.holder,
            now: kept.now,
        })
    }

    fn expired(&self) -> bool {
        self.holder
            .as_ref()
            .is_some_and(|(_, lease)| *lease <= self.now)
    }

    fn held_by(&self, token: &str) -> bool {
        self.holder
            .as_ref()
            .is_some_and(|(holder, _)| holder == token)
    }

    /// When it was read, as the record's timestamps say it.
    fn now(&self) -> SystemTime {
        task_record::at(self.now)
    }
}

/// Who calls: the holder of a lease, or the task's owner.
#[derive(Clone, Copy)]
enum Caller<'a> {
    Holder(&'a TaskLease),
    Owner,
}

/// What a call makes of the task it read.
enum Step<T> {
    /// Nothing to write; the call's answer.
    Keep(T),
    /// A write, and the call's answer once it is applied.
    Write(Box<Change>, T),
}

/// A write a call decided on.
struct Change {
    /// The new record; `None` keeps the one kept.
    record: Option<TaskRecord>,
    after: After,
    /// Whether the holder must act on it.
    signal: bool,
    limit: Limit,
}

/// What a write does if its record does not fit in its principal's bytes or the totals'.
enum Limit {
    Count,
    /// Refused, `Full` with this reason.
    Refuse(&'static str),
    /// This record is kept instead.
    Note(Box<TaskRecord>),
}

impl RedisStore {
    /// Redis's clock, in ms since the epoch.
    async fn clock(&self) -> Result<u64, StoreError> {
        let (seconds, micros): (u64, u64) = self
            .link
            .run("TIME", |mut connection, _| async move {
                redis::cmd("TIME").query_async(&mut connection).await
            })
            .await
            .map_err(StoreError::unavailable)?;
        Ok(seconds * 1000 + micros / 1000)
    }

    /// The task `names` name, a lease that ran out settled; `None` when there is none to keep.
    async fn live(&self, names: &TaskNames) -> Result<Option<Found>, StoreError> {
        for _ in 0..ATTEMPTS {
            let found = match self.task_scripts.read(&self.link, &names.task).await? {
                Read::None => return Ok(None),
                Read::Found(kept) => Found::of(kept)?,
            };
            if !found.expired() {
                return Ok(Some(found));
            }
            let mut record = found.record.clone();
            record.end(TaskEnding::lost(record.execution_id.clone()), found.now());
            let text = encode(&record)?;
            let written = self
                .task_scripts
                .write(
                    &self.link,
                    names,
                    &WriteArgs {
                        op: &op_id(),
                        by: By::Settle,
                        seen: found.version,
                        after: After::Ended,
                        ttl: record.ttl,
                        // A holder still alive learns at once that it lost its task.
                        signal: true,
                        record: Some(&text),
                        bound: Bound::Count,
                        overhead: overhead(names),
                        max_bytes_per_principal: self.options.tasks.max_bytes_per_principal,
                        max_bytes: self.options.tasks.max_bytes,
                    },
                )
                .await?;
            match written {
                Written::Done => {
                    self.holders.wake(&record.key);
                    return Ok(Some(Found {
                        record,
                        version: found.version + 1,
                        signals: found.signals + 1,
                        holder: None,
                        now: found.now,
                    }));
                }
                // Renewed, or settled by another, meanwhile: look again.
                Written::Stale => {}
                Written::Gone => return Ok(None),
                Written::Lost | Written::Full => {
                    return Err(StoreError::unavailable(
                        "the task write script refused to settle a lease that ran out",
                    ));
                }
            }
        }
        Err(busy())
    }

    /// Reads `key`'s task, lets `decide` make a change of it, and writes the change if the
    /// task is still as read, reading again when it is not. `None` when there is no task for
    /// the owner; a holder whose lease is not the task's holder gets `LeaseLost`.
    async fn update<T>(
        &self,
        key: &TaskKey,
        caller: Caller<'_>,
        mut decide: impl FnMut(&Found) -> Step<T>,
    ) -> Result<Option<T>, StoreError> {
        let names = self.keys.task(key);
        let token = match caller {
            Caller::Holder(lease) => Some(token_text(lease.token())),
            Caller::Owner => None,
        };
        let by = token.as_deref().map_or(By::Owner, By::Holder);
        for _ in 0..ATTEMPTS {
            let Some(found) = self.live(&names).await? else {
                return self.absent(caller);
            };
            if token.as_deref().is_some_and(|token| !found.held_by(token)) {
                return self.absent(caller);
            }
            let (change, answer) = match decide(&found) {
                Step::Keep(answer) => {
                    self.seen(caller, found.signals);
                    return Ok(Some(answer));
                }
                Step::Write(change, answer) => (change, answer),
            };
            let record = change.record.as_ref().map(encode).transpose()?;
            let note = match &change.limit {
                Limit::Note(note) => Some(encode(note)?),
                Limit::Count | Limit::Refuse(_) => None,
            };
            let bound = match (&change.limit, &note) {
                (Limit::Refuse(_), _) => Bound::Refuse,
                (_, Some(note)) => Bound::Note(note),
                _ => Bound::Count,
            };
            let written = self
                .task_scripts
                .write(
                    &self.link,
                    &names,
                    &WriteArgs {
                        op: &op_id(),
                        by,
                        seen: found.version,
                        after: change.after,
                        ttl: found.record.ttl,
                        signal: change.signal,
                        record: record.as_deref(),
                        bound,
                        overhead: overhead(&names),
                        max_bytes_per_principal: self.options.tasks.max_bytes_per_principal,
                        max_bytes: self.options.tasks.max_bytes,
                    },
                )
                .await?;
            match written {
                Written::Done => {
                    if change.signal {
                        self.holders.wake(key);
                    }
                    // What the answer was made of: a holder's wait compares with it, so that
                    // what came after the read wakes it.
                    self.seen(caller, found.signals);
                    return Ok(Some(answer));
                }
                Written::Stale => {}
                Written::Gone | Written::Lost => return self.absent(caller),
                Written::Full => {
                    let reason = match change.limit {
                        Limit::Refuse(reason) => reason,
                        Limit::Count | Limit::Note(_) => {
                            "the task does not fit in what this caller may keep"
                        }
                    };
                    return Err(StoreError::Full(reason.into()));
                }
            }
        }
        Err(busy())
    }

    /// What a caller is told of a task that is not there for it: nothing for the owner, a
    /// lost lease for a holder.
    fn absent<T>(&self, caller: Caller<'_>) -> Result<Option<T>, StoreError> {
        match caller {
            Caller::Owner => Ok(None),
            Caller::Holder(lease) => {
                self.holders.release(lease);
                Err(StoreError::LeaseLost)
            }
        }
    }

    fn seen(&self, caller: Caller<'_>, signals: u64) {
        if let Caller::Holder(lease) = caller {
            self.holders.seen(lease, signals);
        }
    }

    /// Settles the running task whose hash is `name`, found in the index of leases with its
    /// lease run out (unless renewed since); drops it from the index if it is gone.
    async fn settle_indexed(&self, name: &str) -> Result<(), StoreError> {
        let kept = match self.task_scripts.read(&self.link, name).await? {
            Read::Found(kept) => kept,
            Read::None => {
                // Its time is up, and nobody settled it. (Should the same principal take the
                // same task id meanwhile, the new task goes unindexed: it is settled when read.)
                let leases = self.keys.task_totals().leases;
                return self
                    .link
                    .run("task unindex", |mut connection, _| {
                        let leases = &leases;
                        async move {
                            redis::cmd("ZREM")
                                .arg(leases)
                                .arg(name)
                                .query_async::<()>(&mut connection)
                                .await
                        }
                    })
                    .await
                    .map_err(StoreError::unavailable);
            }
        };
        let record = match task_record::decode(&kept.record) {
            Ok(record) => record,
            Err(error) => {
                tracing::warn!(%error, task = name, "a kept task cannot be read; the sweep leaves it");
                return Ok(());
            }
        };
        let names = self.keys.task(&record.key);
        if names.task == name {
            self.live(&names).await?;
        } else {
            tracing::warn!(
                task = name,
                "a kept task names another key; the sweep leaves it"
            );
        }
        Ok(())
    }
}

impl TaskStore for RedisStore {
    async fn create(&self, task: NewTask, lease: Duration) -> Result<Created, StoreError> {
        let names = self.keys.task(&task.key);
        let record = TaskRecord::created(task, task_record::at(self.clock().await?));
        let text = encode(&record)?;
        let held = TaskLease::new(record.key.clone(), uuid::Uuid::new_v4().as_u128());
        let created = self
            .task_scripts
            .create(
                &self.link,
                &names,
                &CreateArgs {
                    op: &op_id(),
                    token: &token_text(held.token()),
                    lease,
                    ttl: record.ttl,
                    record: &text,
                    overhead: overhead(&names),
                    max_tasks_per_principal: self.options.tasks.max_per_principal,
                    max_bytes_per_principal: self.options.tasks.max_bytes_per_principal,
                    max_tasks: self.options.tasks.max,
                    max_bytes: self.options.tasks.max_bytes,
                },
            )
            .await?;
        match created {
            CreatedAs::Created => {
                self.holders.hold(&held, 0);
                Ok(Created::new(held, record))
            }
            CreatedAs::Exists => Err(StoreError::unavailable(
                "a task with this id already exists",
            )),
            CreatedAs::Full {
                total: false,
                tasks,
                bytes,
            } => Err(StoreError::Full(format!(
                "this caller already holds {tasks} tasks ({bytes} bytes); retry once older \
                 ones expire"
            ))),
            CreatedAs::Full { total: true, .. } => Err(StoreError::Full(
                "too many tasks are kept; retry once older ones expire".into(),
            )),
        }
    }

    async fn get(&self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self
            .live(&self.keys.task(key))
            .await?
            .map(|found| found.record))
    }

    async fn cancel(&self, key: &TaskKey) -> Result<Option<TaskRecord>, StoreError> {
        self.update(key, Caller::Owner, |found| {
            let mut record = found.record.clone();
            if record.status.is_terminal() || record.cancel_requested {
                return Step::Keep(record);
            }
            record.cancel_requested = true;
            record.updated_at = found.now();
            let change = Change {
                record: Some(record.clone()),
                after: After::Running(None),
                signal: true,
                limit: Limit::Count,
            };
            Step::Write(Box::new(change), record)
        })
        .await
    }

    async fn respond(
        &self,
        key: &TaskKey,
        answers: BTreeMap<String, Value>,
    ) -> Result<Option<Responded>, StoreError> {
        self.update(key, Caller::Owner, |found| {
            let mut record = found.record.clone();
            let responded = record.take_answers(answers.clone(), found.now());
            if responded.accepted.is_empty() {
                return Step::Keep(responded);
            }
            let change = Change {
                record: Some(record),
                after: After::Running(None),
                signal: true,
                limit: Limit::Refuse("the answers do not fit in what this caller may keep"),
            };
            Step::Write(Box::new(change), responded)
        })
        .await
    }

    async fn renew(
        &self,
        lease: &TaskLease,
        duration: Duration,
        report: Option<TaskReport>,
    ) -> Result<TaskSignals, StoreError> {
        self.update(lease.key(), Caller::Holder(lease), |found| {
            let record = report.clone().map(|report| {
                let mut record = found.record.clone();
                record.apply(report, found.now());
                record
            });
            let change = Change {
                record,
                after: After::Running(Some(duration)),
                signal: false,
                limit: Limit::Count,
            };
            Step::Write(Box::new(change), found.record.signals())
        })
        .await?
        .ok_or(StoreError::LeaseLost)
    }

    async fn ask(&self, lease: &TaskLease, questions: Asks) -> Result<(), StoreError> {
        self.update(lease.key(), Caller::Holder(lease), |found| {
            let mut record = found.record.clone();
            record.set_questions(questions.clone(), found.now());
            let change = Change {
                record: Some(record),
                after: After::Running(None),
                signal: false,
                limit: Limit::Refuse("the questions do not fit in what this caller may keep"),
            };
            Step::Write(Box::new(change), ())
        })
        .await?
        .ok_or(StoreError::LeaseLost)
    }

    async fn finish(&self, lease: &TaskLease, ending: TaskEnding) -> Result<(), StoreError> {
        let size = outcome::encode(ending.outcome())
            .map_err(StoreError::unavailable)?
            .len();
        // The call ran: its owner is told so, even if its outcome cannot be kept.
        let noted = TaskEnding::new(outcome::not_kept(ending.outcome(), size));
        let too_large = size > self.options.tasks.max_outcome_bytes;
        self.update(lease.key(), Caller::Holder(lease), |found| {
            let mut note = found.record.clone();
            note.end(noted.clone(), found.now());
            let change = if too_large {
                Change {
                    record: Some(note),
                    after: After::Ended,
                    signal: false,
                    limit: Limit::Count,
                }
            } else {
                let mut record = found.record.clone();
                record.end(ending.clone(), found.now());
                Change {
                    record: Some(record),
                    after: After::Ended,
                    signal: false,
                    limit: Limit::Note(Box::new(note)),
                }
            };
            Step::Write(Box::new(change), ())
        })
        .await?
        .ok_or(StoreError::LeaseLost)?;
        self.holders.release(lease);
        Ok(())
    }

    fn changed(&self, lease: &TaskLease) -> impl Future<Output = ()> + Send {
        // Armed now: the count the holder last read, and this store's wake-up.
        let armed = self.holders.arm(lease);
        holders::changed(
            Arc::clone(&self.link),
            self.keys.task(lease.key()).task,
            token_text(lease.token()),
            armed,
        )
    }

    async fn sweep(&self) -> Result<usize, StoreError> {
        let totals = self.keys.task_totals();
        let (forgotten, due) = self.task_scripts.sweep(&self.link, &totals, SWEPT).await?;
        for name in due {
            self.settle_indexed(&name).await?;
        }
        Ok(forgotten)
    }
}
