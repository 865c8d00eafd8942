//! Durations, instants and counts as the integers SQLite keeps: milliseconds in an `i64`,
//! saturating rather than wrapping.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest span kept (about a thousand years): far from overflowing milliseconds in an
/// `i64` once added to now.
const LONGEST_MS: i64 = 1000 * 366 * 24 * 60 * 60 * 1000;

pub(super) fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).map_or(LONGEST_MS, |ms| ms.min(LONGEST_MS))
}

pub(super) fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(super) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, ms)
}
