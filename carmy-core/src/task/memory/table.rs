//! The in-memory task store's table: the tasks held, each principal's share of them, what each
//! weighs, and the bounds it is held to. The store (`MemoryTaskStore`) locks it and answers
//! the `TaskStore` calls with it.

use std::{collections::HashMap, sync::Arc, time::SystemTime};

use tokio::{sync::watch, time::Instant};

use crate::{
    ask::Asks,
    idempotency::{StoreError, outcome_bytes, value_bytes},
    quotas::Quotas,
    task::{TaskEnding, TaskKey, TaskLease, TaskRecord},
};

/// Bounds of the in-memory task store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryTaskStoreLimits {
    /// The tasks kept, running or ended: 1,000 and 16 MiB per principal, 10,000 and 128 MiB in
    /// all, outcomes of at most 1 MiB (by default).
    pub tasks: Quotas,
}

impl Default for MemoryTaskStoreLimits {
    fn default() -> Self {
        Self {
            tasks: Quotas::new(1_000, 16 << 20, 10_000, 128 << 20, 1 << 20),
        }
    }
}

impl MemoryTaskStoreLimits {
    /// Replaces the quotas of tasks with what `change` makes of them.
    #[must_use]
    pub fn with_tasks(mut self, change: impl FnOnce(Quotas) -> Quotas) -> Self {
        self.tasks = change(self.tasks);
        self
    }
}

/// The tasks held, with each principal's share of them.
#[derive(Default)]
pub(super) struct Tasks {
    by_key: HashMap<TaskKey, Entry>,
    shares: HashMap<Arc<str>, Share>,
    tasks: usize,
    bytes: usize,
    /// Lease tokens are unique in the store: a counter is enough.
    next_token: u128,
}

#[derive(Default)]
struct Share {
    tasks: usize,
    bytes: usize,
}

pub(super) struct Entry {
    pub(super) record: TaskRecord,
    /// The running task's holder; `None` once it ended.
    pub(super) holder: Option<Holder>,
    /// When it ended, for its `ttl`.
    pub(super) ended: Option<Instant>,
    /// What the entry counts for in its share.
    bytes: usize,
    /// Sent to when the holder has something to act on (and dropped with the entry).
    pub(super) changed: watch::Sender<()>,
}

pub(super) struct Holder {
    token: u128,
    pub(super) expires: Instant,
}

impl Entry {
    /// Settles a lease that ran out; whether the entry is still kept at `now`.
    fn is_live(&mut self, now: Instant) -> bool {
        if let Some(holder) = &self.holder
            && now >= holder.expires
        {
            let ending = TaskEnding::lost(self.record.execution_id.clone());
            self.ended = Some(holder.expires);
            self.holder = None;
            self.record.end(ending, SystemTime::now());
            self.changed.send_replace(());
        }
        self.ended
            .is_none_or(|ended| now.duration_since(ended) < self.record.ttl)
    }

    pub(super) fn held_by(&self, lease: &TaskLease) -> bool {
        self.holder
            .as_ref()
            .is_some_and(|holder| holder.token == lease.token())
    }
}

/// About what a task's record takes in memory.
pub(super) fn record_bytes(record: &TaskRecord) -> usize {
    const OVERHEAD: usize = 512;
    OVERHEAD
        + record.key.principal().len()
        + record.key.id().as_str().len()
        + record.tool.len()
        + record.execution_id.as_str().len()
        + record.status_message.as_ref().map_or(0, String::len)
        + asks_bytes(&record.questions)
        + record
            .answers
            .iter()
            .map(|(key, answer)| key.len() + value_bytes(answer))
            .sum::<usize>()
        + record.outcome.as_ref().map_or(0, outcome_bytes)
}

/// About what questions take: their debug form is as long as their text and schemas.
pub(super) fn asks_bytes(asks: &Asks) -> usize {
    if asks.is_empty() {
        0
    } else {
        format!("{asks:?}").len()
    }
}

impl Tasks {
    /// Number of tasks held.
    pub(super) fn len(&self) -> usize {
        self.tasks
    }

    /// Bytes the tasks held are counted for.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn contains(&self, key: &TaskKey) -> bool {
        self.by_key.contains_key(key)
    }

    /// Holds `record`, weighing `bytes`, under a new lease that runs out at `expires`; the
    /// lease's token.
    pub(super) fn add(&mut self, record: TaskRecord, bytes: usize, expires: Instant) -> u128 {
        self.next_token += 1;
        let token = self.next_token;
        let key = record.key.clone();
        self.tasks += 1;
        self.bytes += bytes;
        let share = self.shares.entry(Arc::from(key.principal())).or_default();
        share.tasks += 1;
        share.bytes += bytes;
        self.by_key.insert(
            key,
            Entry {
                record,
                holder: Some(Holder { token, expires }),
                ended: None,
                bytes,
                changed: watch::Sender::new(()),
            },
        );
        token
    }

    /// A receiver told of changes to the task `lease` holds, if it still holds it.
    pub(super) fn watch(&self, lease: &TaskLease) -> Option<watch::Receiver<()>> {
        self.by_key
            .get(lease.key())
            .filter(|entry| entry.held_by(lease))
            .map(|entry| entry.changed.subscribe())
    }

    /// The live entry of `key`: a lost lease settled, an expired task forgotten.
    pub(super) fn live(&mut self, key: &TaskKey, now: Instant) -> Option<&mut Entry> {
        let live = self.by_key.get_mut(key)?.is_live(now);
        if !live {
            self.remove(key);
            return None;
        }
        self.by_key.get_mut(key)
    }

    /// The entry `lease` holds.
    pub(super) fn held(
        &mut self,
        lease: &TaskLease,
        now: Instant,
    ) -> Result<&mut Entry, StoreError> {
        match self.live(lease.key(), now) {
            Some(entry) if entry.held_by(lease) => Ok(entry),
            _ => Err(StoreError::LeaseLost),
        }
    }

    fn remove(&mut self, key: &TaskKey) {
        let Some(entry) = self.by_key.remove(key) else {
            return;
        };
        self.tasks -= 1;
        self.bytes -= entry.bytes;
        if let Some(share) = self.shares.get_mut(key.principal()) {
            share.tasks -= 1;
            share.bytes -= entry.bytes;
            if share.tasks == 0 {
                self.shares.remove(key.principal());
            }
        }
    }

    /// Whether `extra` more bytes fit in `principal`'s share and in the total.
    pub(super) fn fits(&self, principal: &str, extra: usize, quotas: &Quotas) -> bool {
        let share = self.shares.get(principal).map_or(0, |share| share.bytes);
        share + extra <= quotas.max_bytes_per_principal && self.bytes + extra <= quotas.max_bytes
    }

    /// Counts `key`'s entry at what its record now weighs.
    pub(super) fn reweigh(&mut self, key: &TaskKey) {
        let Some(entry) = self.by_key.get_mut(key) else {
            return;
        };
        let (old, new) = (entry.bytes, record_bytes(&entry.record));
        entry.bytes = new;
        self.bytes = self.bytes - old + new;
        if let Some(share) = self.shares.get_mut(key.principal()) {
            share.bytes = share.bytes - old + new;
        }
    }

    /// Settles every lost lease and forgets every expired task; how many were forgotten.
    pub(super) fn sweep(&mut self, now: Instant) -> usize {
        let expired: Vec<TaskKey> = self
            .by_key
            .iter_mut()
            .filter_map(|(key, entry)| (!entry.is_live(now)).then(|| key.clone()))
            .collect();
        for key in &expired {
            self.remove(key);
        }
        expired.len()
    }

    pub(super) fn full(&self, principal: &str, bytes: usize, quotas: &Quotas) -> bool {
        let share = self.shares.get(principal);
        share.is_some_and(|share| share.tasks >= quotas.max_per_principal)
            || self.tasks >= quotas.max
            || !self.fits(principal, bytes, quotas)
    }
}
