//! The open connections: which of them wait for a request and since when, and closing the one
//! that has waited longest to make room.
//!
//! Each connection's activity is one atomic word of its own, which its requests change without
//! a lock: the number of requests in progress, or when it started waiting, or that it was told
//! to close. Every request changes it twice, from either worker thread; a lock over the whole
//! table there would be taken by every request of every connection. Only making room (at the
//! connection cap, or out of descriptors) locks the table and looks through the connections
//! for the one waiting longest; it claims that one by a compare-and-swap from the very word it
//! saw, so a connection whose request starts meanwhile is not closed for room.

use std::{
    collections::HashMap,
    pin::pin,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};
use tokio_util::sync::CancellationToken;

/// The open connections.
pub(super) struct Table {
    max: usize,
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
}

impl Table {
    pub(super) fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            state: Mutex::default(),
            next_wait: AtomicU64::new(0),
            closed: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Counts only: usable after a panic elsewhere.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The word of a connection starting to wait now.
    fn waiting_now(&self) -> u64 {
        WAITING | self.next_wait.fetch_add(1, Ordering::Relaxed)
    }

    /// Returns once one more connection fits, closing the oldest waiting one if none does.
    pub(super) async fn make_room(&self) {
        loop {
            let closed = self.closed.notified();
            let mut closed = pin!(closed);
            closed.as_mut().enable();
            {
                let mut state = self.lock();
                if state.connections.len() < self.max {
                    return;
                }
                if state.evicting == 0 && !state.evict_oldest() {
                    tracing::debug!("every connection is busy: waiting for one to close");
                }
            }
            closed.await;
        }
    }

    /// Closes the oldest waiting connection to free its descriptor, and waits up to `wait` for
    /// it to close; `false` if no connection was waiting.
    pub(super) async fn make_room_for_descriptor(&self, wait: Duration) -> bool {
        let closed = self.closed.notified();
        let mut closed = pin!(closed);
        closed.as_mut().enable();
        if !self.lock().evict_oldest() {
            return false;
        }
        let _ = tokio::time::timeout(wait, closed).await;
        true
    }

    pub(super) fn open(self: &Arc<Self>) -> Arc<Slot> {
        let connection = Arc::new(Connection {
            activity: Activity(AtomicU64::new(self.waiting_now())),
            evict: CancellationToken::new(),
        });
        let id = {
            let mut state = self.lock();
            let id = state.next_id;
            state.next_id += 1;
            state.connections.insert(id, connection.clone());
            id
        };
        Arc::new(Slot {
            table: self.clone(),
            id,
            connection,
            opened: Instant::now(),
            head_since: AtomicU64::new(0),
            head_started: Notify::new(),
        })
    }

    pub(super) async fn all_closed(&self) {
        loop {
            let closed = self.closed.notified();
            let mut closed = pin!(closed);
            closed.as_mut().enable();
            if self.lock().connections.is_empty() {
                return;
            }
            closed.await;
        }
    }
}

impl State {
    /// Tells the connection waiting longest to close; `false` if none waits.
    fn evict_oldest(&mut self) -> bool {
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
            let mut state = self.table.lock();
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

    fn evict_oldest(table: &Table) -> bool {
        table.lock().evict_oldest()
    }

    #[test]
    fn the_connection_waiting_longest_is_closed_for_room_and_a_serving_one_never() {
        let table = Arc::new(Table::new(8));
        let (a, b, c) = (table.open(), table.open(), table.open());
        let serving = a.busy();
        assert!(evict_oldest(&table));
        assert!(
            b.evict().is_cancelled(),
            "b waited longest of those waiting"
        );
        assert!(!a.evict().is_cancelled() && !c.evict().is_cancelled());
        // a waits again from now: after c.
        drop(serving);
        assert!(evict_oldest(&table));
        assert!(c.evict().is_cancelled());
        assert!(evict_oldest(&table));
        assert!(a.evict().is_cancelled());
        assert!(!evict_oldest(&table), "nothing waits any more");
    }

    #[test]
    fn a_connection_serving_several_requests_waits_again_after_the_last() {
        let table = Arc::new(Table::new(8));
        let a = table.open();
        let (first, second) = (a.busy(), a.busy());
        drop(first);
        assert!(a.connection.activity.serving());
        assert!(!evict_oldest(&table));
        drop(second);
        assert!(!a.connection.activity.serving());
        assert!(evict_oldest(&table));
    }

    #[test]
    fn a_connection_told_to_close_stays_closing_and_is_counted_until_it_is_gone() {
        let table = Arc::new(Table::new(8));
        let a = table.open();
        assert!(evict_oldest(&table));
        assert_eq!(table.lock().evicting, 1);
        // A request that starts after the word changes neither brings it back.
        drop(a.busy());
        assert!(!evict_oldest(&table));
        assert_eq!(table.lock().evicting, 1);
        drop(a);
        let state = table.lock();
        assert_eq!((state.evicting, state.connections.len()), (0, 0));
    }
}
