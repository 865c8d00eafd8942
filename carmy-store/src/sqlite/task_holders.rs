//! The tasks a store holds, and how their holders are woken ([`TaskStore::changed`]).
//!
//! Each task held here has a channel whose value is the task's `signal` stamp as the store
//! last knew it (see `schema`'s layout 3). A holder waiting for something to act on subscribes
//! to it; it changes when the store writes something the holder must act on (at once, after
//! the commit), and when the store's thread, polling the file, finds a stamp past the one it
//! knew (another connection wrote it). It closes when the task ends or its lease is lost here.
//! Subscribing takes no trip to the store's thread, so a wait is armed when `changed` is
//! called: a change committed after that moves the value the receiver has not seen yet.
//!
//! [`TaskStore::changed`]: carmy_core::TaskStore::changed

use std::{collections::HashMap, sync::Mutex};

use carmy_core::{TaskKey, TaskLease};
use tokio::sync::watch;

use crate::sync::lock;

#[derive(Debug, Default)]
pub(super) struct TaskHolders {
    held: Mutex<HashMap<TaskKey, Held>>,
}

#[derive(Debug)]
struct Held {
    token: u128,
    /// When the lease runs out, as last renewed here (ms since the epoch).
    expires_at: i64,
    signal: watch::Sender<i64>,
}

/// What a task transaction owes the holders once it is committed (and only then).
#[derive(Debug)]
pub(super) enum Wake {
    /// `lease` holds its task until `expires_at`; `stamp` is the task's in the file.
    Hold {
        lease: TaskLease,
        expires_at: i64,
        stamp: i64,
    },
    /// Something the holder must act on was written, under this stamp.
    Signal(TaskKey, i64),
    /// The task is no longer held: it ended, or its lease was settled as lost.
    Release(TaskKey),
    /// This lease was found not to hold its task.
    Lost(TaskLease),
}

impl TaskHolders {
    pub(super) fn apply(&self, wake: Wake) {
        let mut held = lock(&self.held);
        match wake {
            Wake::Hold {
                lease,
                expires_at,
                stamp,
            } => match held.get_mut(lease.key()) {
                Some(entry) if entry.token == lease.token() => entry.expires_at = expires_at,
                _ => {
                    let entry = Held {
                        token: lease.token(),
                        expires_at,
                        signal: watch::Sender::new(stamp),
                    };
                    // Another holder's entry, if any, is dropped: its waiters look again.
                    held.insert(lease.key().clone(), entry);
                }
            },
            Wake::Signal(key, stamp) => {
                if let Some(entry) = held.get(&key) {
                    advance(entry, stamp);
                }
            }
            Wake::Release(key) => {
                // Dropping the sender closes the channel: every waiter wakes.
                held.remove(&key);
            }
            Wake::Lost(lease) => {
                if held
                    .get(lease.key())
                    .is_some_and(|entry| entry.token == lease.token())
                {
                    held.remove(lease.key());
                }
            }
        }
    }

    /// A receiver that changes when `lease`'s holder has something to act on; `None` when the
    /// lease holds nothing here (its task ended, or it is not this store's).
    pub(super) fn subscribe(&self, lease: &TaskLease) -> Option<watch::Receiver<i64>> {
        lock(&self.held)
            .get(lease.key())
            .filter(|entry| entry.token == lease.token())
            .map(|entry| entry.signal.subscribe())
    }

    /// What the poll found: `key`'s stamp in the file. Whether a holder here was woken.
    pub(super) fn signal(&self, key: &TaskKey, stamp: i64) -> bool {
        lock(&self.held)
            .get(key)
            .is_some_and(|entry| advance(entry, stamp))
    }

    /// Whether any task is held here: only then is the file polled for others' writes.
    pub(super) fn is_empty(&self) -> bool {
        lock(&self.held).is_empty()
    }

    /// Forgets the leases that ran out (at `now`) and nobody waits on: a holder that stopped
    /// without finishing (its process is going away).
    pub(super) fn prune(&self, now: i64) {
        lock(&self.held)
            .retain(|_, entry| entry.expires_at > now || entry.signal.receiver_count() > 0);
    }
}

/// Moves `entry`'s stamp to `stamp` if that is later; whether it moved (and woke its waiters).
fn advance(entry: &Held, stamp: i64) -> bool {
    entry.signal.send_if_modified(|known| {
        let later = stamp > *known;
        if later {
            *known = stamp;
        }
        later
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(holders: &TaskHolders, token: u128) -> TaskLease {
        let lease = TaskLease::new(TaskKey::new(Some("alice"), "task_1"), token);
        holders.apply(Wake::Hold {
            lease: lease.clone(),
            expires_at: 1_000,
            stamp: 5,
        });
        lease
    }

    #[test]
    fn only_a_later_stamp_wakes_the_holder() {
        let holders = TaskHolders::default();
        let lease = held(&holders, 7);
        let mut signal = holders.subscribe(&lease).unwrap();
        assert!(!holders.signal(lease.key(), 5), "a stamp known already");
        assert!(!holders.signal(lease.key(), 3), "an older stamp");
        assert!(!signal.has_changed().unwrap());
        assert!(holders.signal(lease.key(), 6));
        assert!(signal.has_changed().unwrap());
        signal.mark_unchanged();
        // A renewal keeps the channel (and what its receivers saw); only the expiry moves.
        holders.apply(Wake::Hold {
            lease: lease.clone(),
            expires_at: 2_000,
            stamp: 0,
        });
        assert!(!signal.has_changed().unwrap());
        holders.apply(Wake::Signal(lease.key().clone(), 9));
        assert!(signal.has_changed().unwrap());
    }

    #[test]
    fn another_lease_holds_nothing_and_loses_nothing() {
        let holders = TaskHolders::default();
        let lease = held(&holders, 7);
        let stranger = TaskLease::new(lease.key().clone(), 8);
        assert!(holders.subscribe(&stranger).is_none());
        let signal = holders.subscribe(&lease).unwrap();
        holders.apply(Wake::Lost(stranger));
        assert!(signal.has_changed().is_ok(), "the holder's channel is open");
        holders.apply(Wake::Lost(lease.clone()));
        assert!(signal.has_changed().is_err(), "closed: the holder looks");
        assert!(holders.subscribe(&lease).is_none());
        assert!(holders.is_empty());
    }

    #[test]
    fn an_ended_task_closes_its_channel_and_pruning_spares_waiters() {
        let holders = TaskHolders::default();
        let lease = held(&holders, 7);
        let signal = holders.subscribe(&lease).unwrap();
        // Its lease ran out (at 1,000) but someone waits: kept until the holder looks.
        holders.prune(1_500);
        assert!(!holders.is_empty());
        drop(signal);
        holders.prune(1_500);
        assert!(holders.is_empty());
        let lease = held(&holders, 7);
        let signal = holders.subscribe(&lease).unwrap();
        holders.apply(Wake::Release(lease.key().clone()));
        assert!(signal.has_changed().is_err());
    }
}
