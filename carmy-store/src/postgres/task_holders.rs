//! [`Holders`]: what each lease held through this store last read of its task, so that a
//! holder's poll wakes it for what it has not read yet.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use tokio::time::Instant;

use crate::sync::lock;

/// What each lease held through this store last read of its task's `signal`, so that a holder's
/// poll wakes it for what it has not read yet. Kept while the lease is believed held, by this
/// process's clock; a lease given up or lost here is forgotten at once.
#[derive(Debug, Default)]
pub(super) struct Holders(Mutex<HashMap<u128, Heard>>);

#[derive(Debug)]
struct Heard {
    signal: i64,
    /// Past this, the lease has surely run out on the server's clock too.
    until: Instant,
}

impl Holders {
    pub(super) fn heard(&self, token: u128, signal: i64, lease: Duration) {
        // Twice the lease: a renewal may be late, and clocks differ a little.
        let until = Instant::now() + lease.saturating_mul(2);
        lock(&self.0).insert(token, Heard { signal, until });
    }

    pub(super) fn last(&self, token: u128) -> Option<i64> {
        lock(&self.0).get(&token).map(|heard| heard.signal)
    }

    pub(super) fn forget(&self, token: u128) {
        lock(&self.0).remove(&token);
    }

    /// Forgets the leases whose holders stopped renewing (a replica's runtime stopped with its
    /// tasks): they hold nothing any more.
    pub(super) fn prune(&self) {
        let now = Instant::now();
        lock(&self.0).retain(|_, heard| heard.until > now);
    }
}
