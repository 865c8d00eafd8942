//! The crate's one way to take a lock.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, recovering it if a thread panicked while holding it. Every mutex of the
/// transports guards plain bookkeeping (counts, queues of bytes, tables of tokens) that each
/// update leaves consistent, and nothing is awaited or called out to under these locks: a
/// panic elsewhere leaves the data usable, so refusing it would only turn one failed request
/// into a server that fails every request after it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
