//! The tasks this store holds, and how their holders learn that something was written for them
//! ([`TaskStore::changed`](carmy_core::TaskStore::changed)).
//!
//! Every write a holder must act on (a cancel request, answers, its lease settled by another)
//! counts up the task's `signals` in Redis. The store remembers, for each lease it holds, the
//! count its holder last read (with each renewal); `changed` takes that count when it is
//! called (so it is armed then, not when first polled) and resolves once the task's count is
//! another, or the lease is no longer the task's holder. A write from this very store (the
//! runtimes of one process share it) wakes it at once; one from another replica is seen by
//! polling the two fields, 50 ms after the call, then twice as long each time up to every
//! 500 ms. A poll that fails is tried again later: while Redis is away, the holder's own
//! renewals (every third of its lease) fail and tell it so, and a wait that ended at each
//! failed poll would spin with them.
//!
//! Why polling rather than pub/sub, as for the claims' waiters (see `waiters`): a
//! notification published while the subscriber's connection is down is lost, so a holder
//! would have to poll anyway to be sure, and pub/sub would add a connection per store to
//! keep subscribed across reconnects, and per task to subscribe and unsubscribe. A poll is one
//! `HMGET` of two fields of one running task, for as long as it waits: a holder waiting hours
//! for an answer costs Redis two such reads a second, the cheapest it serves. Its cost is the
//! latency: another replica's cancel or answer reaches the holder within half
//! a second (and the client that sent it polls the task, at its `poll_interval`, to see it).
//! The count is its own field, not the record's version, because the holder's own renewals
//! move the version on: a wait on the version would wake at every renewal.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use carmy_core::{TaskKey, TaskLease};
use tokio::{sync::watch, time::sleep};

use super::link::Link;
use crate::sync::lock;

/// The first pause of a holder's poll; it doubles up to [`LONGEST_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(50);
const LONGEST_POLL: Duration = Duration::from_millis(500);

/// The leases this store holds, by task.
#[derive(Debug, Default)]
pub(super) struct Holders {
    held: Mutex<HashMap<TaskKey, Held>>,
}

#[derive(Debug)]
struct Held {
    token: u128,
    /// The task's signals as its holder last read them.
    signals: u64,
    /// Sent to when this store writes something the holder must act on; dropped with the
    /// hold, which wakes the waits too.
    wake: watch::Sender<()>,
}

/// A wait armed by [`Holders::arm`]: the count it compares, and this store's wake-up.
pub(super) struct Armed {
    signals: u64,
    wake: watch::Receiver<()>,
}

impl Holders {
    /// `lease` is this store's, its holder having read `signals`.
    pub(super) fn hold(&self, lease: &TaskLease, signals: u64) {
        lock(&self.held).insert(
            lease.key().clone(),
            Held {
                token: lease.token(),
                signals,
                wake: watch::Sender::new(()),
            },
        );
    }

    /// The holder of `lease` read `signals`.
    pub(super) fn seen(&self, lease: &TaskLease, signals: u64) {
        if let Some(held) = lock(&self.held).get_mut(lease.key())
            && held.token == lease.token()
        {
            held.signals = signals;
        }
    }

    /// `lease` is over (finished, or lost): its waits resolve.
    pub(super) fn release(&self, lease: &TaskLease) {
        let mut held = lock(&self.held);
        if held
            .get(lease.key())
            .is_some_and(|held| held.token == lease.token())
        {
            held.remove(lease.key());
        }
    }

    /// This store wrote something for `key`'s holder to act on.
    pub(super) fn wake(&self, key: &TaskKey) {
        if let Some(held) = lock(&self.held).get(key) {
            held.wake.send_replace(());
        }
    }

    /// A wait for `lease`, armed now; `None` when this store does not hold it (a wait that
    /// has nothing to wait for resolves at once).
    pub(super) fn arm(&self, lease: &TaskLease) -> Option<Armed> {
        lock(&self.held)
            .get(lease.key())
            .filter(|held| held.token == lease.token())
            .map(|held| Armed {
                signals: held.signals,
                wake: held.wake.subscribe(),
            })
    }
}

/// Resolves once the task whose hash is `task` has signals other than `armed`'s, or `token`
/// (as the hash keeps it) no longer holds it, or this store wakes it.
pub(super) async fn changed(link: Arc<Link>, task: String, token: String, armed: Option<Armed>) {
    let Some(Armed { signals, mut wake }) = armed else {
        return;
    };
    let mut pause = FIRST_POLL;
    loop {
        tokio::select! {
            // Sent to, or the hold dropped: either way, time to look.
            _ = wake.changed() => return,
            () = sleep(pause) => {}
        }
        pause = (pause * 2).min(LONGEST_POLL);
        let polled = link
            .run("task poll", |mut connection, _| {
                let task = &task;
                async move {
                    redis::cmd("HMGET")
                        .arg(task)
                        .arg("token")
                        .arg("signals")
                        .query_async::<(Option<String>, Option<u64>)>(&mut connection)
                        .await
                }
            })
            .await;
        match polled {
            Ok((holder, now)) if holder.as_deref() != Some(&token) || now != Some(signals) => {
                return;
            }
            // Unchanged, or Redis did not answer: look again later.
            _ => {}
        }
    }
}
