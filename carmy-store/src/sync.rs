//! [`lock`]: how every mutex of the crate is taken, recovering from poisoning.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, even if a thread panicked while it held it.
///
/// The crate's mutexes guard maps of who waits on what (waiters, the holders of tasks) and the
/// Redis link's current connection. No invariant spans any of these locks: each change is one
/// call on the value, done or not done, so what a panic leaves behind is still usable. Failing
/// every later call of the store over one panic would help nobody, so the poison is ignored.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
