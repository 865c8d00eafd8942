//! The open connections: which of them wait for a request and since when, which write to a
//! client that takes no bytes and since when, and closing one of them to make room.
//!
//! Each connection's activity is one atomic word of its own, which its requests change without
//! a lock: the number of requests in progress, or when it started waiting, or that it was told
//! to close. Every request changes it twice, from either worker thread; a lock over the whole
//! table there would be taken by every request of every connection. Only making room (at the
//! connection cap, or out of descriptors) locks the table and looks through the connections
//! for the one waiting longest, or failing that the one whose writes have stalled longest; it
//! claims that one by a compare-and-swap from the very word it saw, so a connection whose
//! request starts (or ends) meanwhile is looked at again rather than closed on a stale view.

use std::{
    collections::HashMap,
    pin::pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// The open connections.
pub(super) struct Table {
    max: usize,
    /// What stall times are counted from.
    epoch: Instant,
    state: Mutex<State>,
    /// Orders the waiting connections: a stamp is taken each time one starts waiting.
    next_wait: AtomicU64,
    /// A connection closed.
    closed: Notify,
}

#[derive(Default)]
struct State {
    next_id: u64,
    connections: HashMap<u64, Arc<Connection>>,
    /// Connections told to close for room that have not closed yet.
    evicting: usize,
}

/// What the table and a connection's own tasks share of it.
struct Connection {
    activity: Activity,
    /// Since when a write has been waiting for the client to take bytes: milliseconds since the
    /// table's epoch, plus one; 0 while writes go through.
    stalled_since: AtomicU64,
    /// Cancelled to close the connection for room.
    evict: CancellationToken,
}

/// One open connection's place in the table; dropping it closes the place.
pub(super) struct Slot {
    table: Arc<Table>,
    id: u64,
    connection: Arc<Connection>,
    opened: Instant,
    /// When the pending request head's first bytes arrived: milliseconds since `opened`, plus
    /// one; 0 when no head is pending.
    head_since: AtomicU64,
    /// A head started: its deadline runs.
    pub(super) head_started: Notify,
    /// A write stalled: its deadline runs.
    pub(super) write_stalled: Notify,
}

impl Table {
    pub(super) fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            epoch: Instant::now(),
            state: Mutex::default(),
            next_wait: AtomicU64::new(0),
            closed: Notify::new(),
        }
    }

    /// The word of a connection starting to wait now.
    fn waiting_now(&self) -> u64 {
        WAITING | self.next_wait.fetch_add(1, Ordering::Relaxed)
    }

    /// A place for one more connection: there is room, or a connection waiting for a request
    /// (or else one whose writes have stalled) is told to close to make it; `None` when every
    /// connection is busy. Never waits: a connection told to close is on its way out, and is
    /// not counted against the bound meanwhile.
    pub(super) fn admit(self: &Arc<Self>) -> Option<Arc<Slot>> {
        let mut state = lock(&self.state);
        if state.connections.len() - state.evicting >= self.max && !state.evict_one() {
            return None;
        }
        let connection = Arc::new(Connection {
            activity: Activity(AtomicU64::new(self.waiting_now())),
            stalled_since: AtomicU64::new(0),
            evict: CancellationToken::new(),
        });
        let id = state.next_id;
        state.next_id += 1;
        state.connections.insert(id, connection.clone());
        drop(state);
        Some(Arc::new(Slot {
            table: self.clone(),
            id,
            connection,
            opened: Instant::now(),
            head_since: AtomicU64::new(0),
            head_started: Notify::new(),
            write_stalled: Notify::new(),
        }))
    }

    /// Closes a connection waiting for a request (or else one whose writes have stalled) to
    /// free its descriptor, and waits up to `wait` for it to close; `false` if none could be.
    pub(super) async fn make_room_for_descriptor(&self, wait: Duration) -> bool {
        let closed = self.closed.notified();
        let mut closed = pin!(closed);
        closed.as_mut().enable();
        if !lock(&self.state).evict_one() {
            return false;
        }
        let _ = tokio::time::timeout(wait, closed).await;
        true
    }

    /// Milliseconds since the epoch, plus one (never 0).
    fn stamp(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    pub(super) async fn all_closed(&self) {
        loop {
            let closed = self.closed.notified();
            let mut closed = pin!(closed);
            closed.as_mut().enable();
            if lock(&self.state).connections.is_empty() {
                return;
            }
            closed.await;
        }
    }
}

impl State {
    /// Tells a connection to close for room: the one waiting longest for a request, or else
    /// the one whose writes have stalled longest; `false` if there is neither.
    fn evict_one(&mut self) -> bool {
        self.evict_oldest_waiting() || self.evict_longest_stalled()
    }

    /// Tells the connection waiting longest to close; `false` if none waits.
    fn evict_oldest_waiting(&mut self) -> bool {
        loop {
            let oldest = self
                .connections
                .values()
                .filter_map(|connection| Some((connection.activity.waiting()?, connection)))
                .min_by_key(|(word, _)| *word);
            let Some((seen, connection)) = oldest else {
                return false;
            };
            // A request may have started on it since: then it is not waiting, and the next
            // oldest is looked for.
            if connection.activity.close_if_still(seen) {
                connection.evict.cancel();
                self.evicting += 1;
                return true;
            }
        }
    }

    /// Tells the connection whose writes have stalled longest to close, whatever it serves:
    /// its client takes nothing of it; `false` if no connection's writes have stalled.
    fn evict_longest_stalled(&mut self) -> bool {
        loop {
            let longest = self
                .connections
                .values()
                .filter_map(|connection| {
                    let since = connection.stalled_since.load(Ordering::Relaxed);
                    let word = connection.activity.0.load(Ordering::Acquire);
                    (since != 0 && word != CLOSING).then_some((since, word, connection))
                })
                .min_by_key(|(since, _, _)| *since);
            let Some((_, seen, connection)) = longest else {
                return false;
            };
            // Its activity changed since (a request started or ended): looked at again.
            if connection.activity.close_if_still(seen) {
                connection.evict.cancel();
                self.evicting += 1;
                return true;
            }
        }
    }
}

impl Slot {
    /// Cancelled when the connection is to close for room.
    pub(super) fn evict(&self) -> &CancellationToken {
        &self.connection.evict
    }

    /// Bytes arrived: if no request is in progress and no head was pending, a head starts.
    /// (Bytes a client sends ahead while a request is in progress, pipelining, start no
    /// deadline; such a connection is still closed first for room.)
    pub(super) fn bytes_arrived(&self) {
        if self.connection.activity.serving() || self.head_since.load(Ordering::Relaxed) != 0 {
            return;
        }
        let since = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        self.head_since.store(since + 1, Ordering::Relaxed);
        self.head_started.notify_one();
    }

    /// A write is waiting for the client to take bytes: if none was, its deadline starts.
    pub(super) fn write_blocked(&self) {
        let stalled = &self.connection.stalled_since;
        if stalled.load(Ordering::Relaxed) == 0 {
            stalled.store(self.table.stamp(), Ordering::Relaxed);
            self.write_stalled.notify_one();
        }
    }

    /// The client took bytes: writes go through again.
    pub(super) fn write_went_through(&self) {
        let stalled = &self.connection.stalled_since;
        if stalled.load(Ordering::Relaxed) != 0 {
            stalled.store(0, Ordering::Relaxed);
        }
    }

    /// When the stalled write is late, if one is stalled.
    pub(super) fn write_deadline(&self, timeout: Duration) -> Option<Instant> {
        match self.connection.stalled_since.load(Ordering::Relaxed) {
            0 => None,
            since => Some(self.table.epoch + Duration::from_millis(since - 1) + timeout),
        }
    }

    /// When the pending head is late, if one is pending.
    pub(super) fn head_deadline(&self, timeout: Duration) -> Option<Instant> {
        match self.head_since.load(Ordering::Relaxed) {
            0 => None,
            since => Some(self.opened + Duration::from_millis(since - 1) + timeout),
        }
    }

    /// The connection serves a request until the guard is dropped.
    pub(super) fn busy(self: &Arc<Self>) -> BusyGuard {
        self.head_since.store(0, Ordering::Relaxed);
        self.connection.activity.update(|word| match word {
            // Told to close already: it closes, and the request with it.
            CLOSING => None,
            word if is_waiting(word) => Some(1),
            requests => Some(requests + 1),
        });
        BusyGuard { slot: self.clone() }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut state = lock(&self.table.state);
            if state.connections.remove(&self.id).is_some() && self.connection.activity.is_closing()
            {
                state.evicting -= 1;
            }
        }
        self.table.closed.notify_waiters();
    }
}

pub(super) struct BusyGuard {
    slot: Arc<Slot>,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        let table = &self.slot.table;
        self.slot.connection.activity.update(|word| match word {
            CLOSING => None,
            1 => Some(table.waiting_now()),
            requests => Some(requests - 1),
        });
    }
}

/// A connection's activity word: `WAITING` and a stamp while it waits for a request (the
/// smallest stamp waited longest), the number of requests in progress while it serves, or
/// `CLOSING` once told to close for room (final).
struct Activity(AtomicU64);

const WAITING: u64 = 1 << 63;
const CLOSING: u64 = u64::MAX;

fn is_waiting(word: u64) -> bool {
    word & WAITING != 0 && word != CLOSING
}

impl Activity {
    /// The word, if the connection waits (words of waiting connections order them by how long
    /// they have waited).
    fn waiting(&self) -> Option<u64> {
        let word = self.0.load(Ordering::Acquire);
        is_waiting(word).then_some(word)
    }

    /// Marks the connection closing if its word is still `seen`.
    fn close_if_still(&self, seen: u64) -> bool {
        self.0
            .compare_exchange(seen, CLOSING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn is_closing(&self) -> bool {
        self.0.load(Ordering::Acquire) == CLOSING
    }

    /// Whether a request is in progress.
    fn serving(&self) -> bool {
        self.0.load(Ordering::Relaxed) & WAITING == 0
    }

    /// Applies `change` to the word until no other thread changed it meanwhile; `None` leaves
    /// it as it is.
    fn update(&self, change: impl FnMut(u64) -> Option<u64>) {
        let _ = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, change);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evict_one(table: &Table) -> bool {
        lock(&table.state).evict_one()
    }

    fn open(table: &Arc<Table>) -> Arc<Slot> {
        table.admit().expect("room")
    }

    #[test]
    fn the_connection_waiting_longest_is_closed_for_room_and_a_serving_one_never() {
        let table = Arc::new(Table::new(8));
        let (a, b, c) = (open(&table), open(&table), open(&table));
        let serving = a.busy();
        assert!(evict_one(&table));
        assert!(
            b.evict().is_cancelled(),
            "b waited longest of those waiting"
        );
        assert!(!a.evict().is_cancelled() && !c.evict().is_cancelled());
        // a waits again from now: after c.
        drop(serving);
        assert!(evict_one(&table));
        assert!(c.evict().is_cancelled());
        assert!(evict_one(&table));
        assert!(a.evict().is_cancelled());
        assert!(!evict_one(&table), "nothing waits any more");
    }

    #[test]
    fn a_connection_serving_several_requests_waits_again_after_the_last() {
        let table = Arc::new(Table::new(8));
        let a = open(&table);
        let (first, second) = (a.busy(), a.busy());
        drop(first);
        assert!(a.connection.activity.serving());
        assert!(!evict_one(&table));
        drop(second);
        assert!(!a.connection.activity.serving());
        assert!(evict_one(&table));
    }

    #[test]
    fn a_connection_told_to_close_stays_closing_and_is_counted_until_it_is_gone() {
        let table = Arc::new(Table::new(8));
        let a = open(&table);
        assert!(evict_one(&table));
        assert_eq!(lock(&table.state).evicting, 1);
        // A request that starts after the word changes neither brings it back.
        drop(a.busy());
        assert!(!evict_one(&table));
        assert_eq!(lock(&table.state).evicting, 1);
        drop(a);
        let state = lock(&table.state);
        assert_eq!((state.evicting, state.connections.len()), (0, 0));
    }

    #[test]
    fn a_connection_whose_writes_stalled_is_closed_for_room_after_every_waiting_one() {
        let table = Arc::new(Table::new(8));
        let (quiet, writing, stalled) = (open(&table), open(&table), open(&table));
        let (_writing, _stalled) = (writing.busy(), stalled.busy());
        stalled.write_blocked();
        assert!(evict_one(&table));
        assert!(quiet.evict().is_cancelled(), "the waiting one first");
        assert!(evict_one(&table));
        assert!(
            stalled.evict().is_cancelled(),
            "then the one its client stopped reading"
        );
        assert!(
            !evict_one(&table),
            "a connection serving a request and writing is never closed for room"
        );
        assert!(!writing.evict().is_cancelled());
        // Writes that go through again end the stall.
        writing.write_blocked();
        writing.write_went_through();
        assert!(!evict_one(&table));
        assert_eq!(writing.write_deadline(Duration::from_secs(1)), None);
    }

    #[test]
    fn with_every_connection_busy_there_is_no_room_and_nobody_waits_for_it() {
        let table = Arc::new(Table::new(2));
        let (a, b) = (open(&table), open(&table));
        let (_a, _b) = (a.busy(), b.busy());
        assert!(table.admit().is_none());
        // One told to close is on its way out: its place is taken at once.
        b.write_blocked();
        let c = table.admit().expect("room made");
        assert!(b.evict().is_cancelled());
        let serving = c.busy();
        assert!(table.admit().is_none());
        drop((b, _b));
        drop((c, serving));
        assert!(table.admit().is_some());
    }
}
