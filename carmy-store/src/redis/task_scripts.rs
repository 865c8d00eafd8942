//! The Lua scripts of tasks (`lua/task*.lua`), what each is sent and what it answers.
//!
//! A task's record changes by rules written in Rust ([`TaskRecord`](carmy_core::TaskRecord)'s
//! methods), so a change is a read, the rule, and a write that applies only if the task is
//! still as it was read: `task_read` returns the task with its version and Redis's clock,
//! `task_write` compares the version (and the holder's token, for a holder's call) and sets
//! the record, all in one script. `task_create` makes a task whole, and `task_sweep` names the
//! leases that ran out. Each runs atomically, like the claims' scripts.

use std::time::Duration;

use carmy_core::StoreError;
use redis::Script;

use super::{
    keys::{TaskNames, TaskTotals},
    link::{Link, LinkError},
    script_calls::{field, invoke, ms, number, unexpected},
};

const READ: &str = include_str!("lua/task_read.lua");
const CREATE: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/task.lua"),
    include_str!("lua/task_create.lua")
);
const WRITE: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/task.lua"),
    include_str!("lua/task_write.lua")
);
const SWEEP: &str = concat!(
    include_str!("lua/common.lua"),
    include_str!("lua/task_sweep.lua")
);

pub(super) struct TaskScripts {
    read: Script,
    create: Script,
    write: Script,
    sweep: Script,
}

/// A task as `task_read` found it.
pub(super) enum Read {
    /// No task to keep under that key.
    None,
    Found(Kept),
}

/// A task's hash, read at one moment.
pub(super) struct Kept {
    /// Redis's clock when it was read, in ms since the epoch.
    pub(super) now: u64,
    pub(super) version: u64,
    pub(super) signals: u64,
    /// The holder's token and when its lease ends (ms since the epoch), while it runs.
    pub(super) holder: Option<(String, u64)>,
    /// The record as stored JSON.
    pub(super) record: String,
}

/// What a create is sent besides its keys.
pub(super) struct CreateArgs<'a> {
    pub(super) op: &'a str,
    pub(super) token: &'a str,
    pub(super) lease: Duration,
    pub(super) ttl: Duration,
    pub(super) record: &'a str,
    pub(super) overhead: usize,
    pub(super) max_tasks_per_principal: usize,
    pub(super) max_bytes_per_principal: usize,
    pub(super) max_tasks: usize,
    pub(super) max_bytes: usize,
}

/// What a create found.
pub(super) enum CreatedAs {
    Created,
    Exists,
    /// The principal's share (`total` false) or the totals are full.
    Full {
        total: bool,
        tasks: u64,
        bytes: u64,
    },
}

/// Who writes, as `task_write` checks it.
#[derive(Clone, Copy)]
pub(super) enum By<'a> {
    /// The holder of the lease whose token this is.
    Holder(&'a str),
    /// The owner (cancel, respond).
    Owner,
    /// Whoever found the lease run out, ending the task as lost.
    Settle,
}

/// What the task is after a write.
#[derive(Clone, Copy)]
pub(super) enum After {
    /// Still running: under a new lease of this long from now, or the lease it has.
    Running(Option<Duration>),
    Ended,
}

/// What a write does when the record grows past the bytes of its principal's share or of
/// the totals.
pub(super) enum Bound<'a> {
    /// Counts it all the same.
    Count,
    /// Refuses the write (`Full`).
    Refuse,
    /// Keeps this record instead (its outcome noted, not kept).
    Note(&'a str),
}

/// What a write is sent besides its keys.
pub(super) struct WriteArgs<'a> {
    pub(super) op: &'a str,
    pub(super) by: By<'a>,
    pub(super) seen: u64,
    pub(super) after: After,
    pub(super) ttl: Duration,
    /// Whether the holder must act on it.
    pub(super) signal: bool,
    /// The record as stored JSON; `None` keeps the record.
    pub(super) record: Option<&'a str>,
    pub(super) bound: Bound<'a>,
    pub(super) overhead: usize,
    pub(super) max_bytes_per_principal: usize,
    pub(super) max_bytes: usize,
}

/// What a write found.
pub(super) enum Written {
    /// Applied (by this very call, perhaps sent twice).
    Done,
    Gone,
    Lost,
    Stale,
    Full,
}

impl TaskScripts {
    pub(super) fn new() -> Self {
        Self {
            read: Script::new(READ),
            create: Script::new(CREATE),
            write: Script::new(WRITE),
            sweep: Script::new(SWEEP),
        }
    }

    /// Loads every script into the server's cache.
    pub(super) async fn load(&self, link: &Link) -> Result<(), LinkError> {
        for script in [&self.read, &self.create, &self.write, &self.sweep] {
            link.run("script load", |mut connection, _| async move {
                script.load_async(&mut connection).await
            })
            .await?;
        }
        Ok(())
    }

    /// The task whose hash is `task`. It writes nothing: sent again, it reads again.
    pub(super) async fn read(&self, link: &Link, task: &str) -> Result<Read, StoreError> {
        let reply = invoke(link, "task read", |_| {
            let mut invocation = self.read.prepare_invoke();
            invocation.key(task);
            invocation
        })
        .await?;
        let number = |n: usize| number("task read", &reply, n);
        match reply.first().map(String::as_str) {
            Some("none") => Ok(Read::None),
            Some("found") => {
                let token = field("task read", &reply, 4)?;
                let holder = if token.is_empty() {
                    None
                } else {
                    Some((token.to_owned(), number(5)?))
                };
                Ok(Read::Found(Kept {
                    now: number(1)?,
                    version: number(2)?,
                    signals: number(3)?,
                    holder,
                    record: field("task read", &reply, 6)?.to_owned(),
                }))
            }
            _ => Err(unexpected("task read", &reply)),
        }
    }

    /// Creates the task `names` name. Sent again after its answer was lost, it is recognised
    /// by its id (`args.op`) and answers `Created` once more.
    pub(super) async fn create(
        &self,
        link: &Link,
        names: &TaskNames,
        args: &CreateArgs<'_>,
    ) -> Result<CreatedAs, StoreError> {
        let reply = invoke(link, "task create", |_| {
            let mut invocation = self.create.prepare_invoke();
            for key in names.all() {
                invocation.key(key);
            }
            invocation
                .arg(args.op)
                .arg(args.token)
                .arg(ms(args.lease))
                .arg(ms(args.ttl))
                .arg(args.record)
                .arg(args.overhead)
                .arg(args.max_tasks_per_principal)
                .arg(args.max_bytes_per_principal)
                .arg(args.max_tasks)
                .arg(args.max_bytes);
            invocation
        })
        .await?;
        match reply.first().map(String::as_str) {
            Some("created") => Ok(CreatedAs::Created),
            Some("exists") => Ok(CreatedAs::Exists),
            Some("full") => Ok(CreatedAs::Full {
                total: field("task create", &reply, 1)? == "total",
                tasks: number("task create", &reply, 2)?,
                bytes: number("task create", &reply, 3)?,
            }),
            _ => Err(unexpected("task create", &reply)),
        }
    }

    /// Writes the task `names` name if it is still at `args.seen`. Sent again after its answer
    /// was lost, it finds the version moved on, and its own id (`args.op`) among the task's
    /// last writes: it answers `Done`, applied once.
    pub(super) async fn write(
        &self,
        link: &Link,
        names: &TaskNames,
        args: &WriteArgs<'_>,
    ) -> Result<Written, StoreError> {
        let (by, token) = match args.by {
            By::Holder(token) => ("holder", token),
            By::Owner => ("owner", ""),
            By::Settle => ("settle", ""),
        };
        let (state, renewal) = match args.after {
            After::Running(Some(lease)) => ("running", ms(lease).to_string()),
            After::Running(None) => ("running", String::new()),
            After::Ended => ("ended", String::new()),
        };
        let (bound, note) = match args.bound {
            Bound::Count => ("", ""),
            Bound::Refuse => ("refuse", ""),
            Bound::Note(note) => ("note", note),
        };
        let reply = invoke(link, "task write", |_| {
            let mut invocation = self.write.prepare_invoke();
            for key in names.all() {
                invocation.key(key);
            }
            invocation
                .arg(args.op)
                .arg(by)
                .arg(args.seen)
                .arg(token)
                .arg(state)
                .arg(&renewal)
                .arg(ms(args.ttl))
                .arg(if args.signal { "signal" } else { "" })
                .arg(args.record.unwrap_or_default())
                .arg(bound)
                .arg(note)
                .arg(args.overhead)
                .arg(args.max_bytes_per_principal)
                .arg(args.max_bytes);
            invocation
        })
        .await?;
        match reply.first().map(String::as_str) {
            Some("done") => Ok(Written::Done),
            Some("gone") => Ok(Written::Gone),
            Some("lost") => Ok(Written::Lost),
            Some("stale") => Ok(Written::Stale),
            Some("full") => Ok(Written::Full),
            _ => Err(unexpected("task write", &reply)),
        }
    }

    /// Counts out of the totals the tasks whose time is up, and names at most `most` running
    /// tasks whose lease ran out: how many were counted out, and the names.
    pub(super) async fn sweep(
        &self,
        link: &Link,
        totals: &TaskTotals,
        most: usize,
    ) -> Result<(usize, Vec<String>), StoreError> {
        let reply = invoke(link, "task sweep", |_| {
            let mut invocation = self.sweep.prepare_invoke();
            invocation
                .key(&totals.share)
                .key(&totals.weights)
                .key(&totals.leases)
                .arg(most);
            invocation
        })
        .await?;
        let forgotten = number("task sweep", &reply, 0)?;
        let forgotten = usize::try_from(forgotten).unwrap_or(usize::MAX);
        Ok((forgotten, reply.into_iter().skip(1).collect()))
    }
}
