//! Locking, the one way the crate does it. Ground level: it knows nothing of the crate, so
//! every module may use it.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking the guard even if a holder panicked.
///
/// A poisoned lock is recovered from, not refused: no lock in this crate is held across an
/// await, and none is left with its data half-updated while a call that may panic runs, so the
/// data behind a poisoned lock is still consistent. Refusing it would turn one panic into a
/// failure of every later call that needs the lock.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
