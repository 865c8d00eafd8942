//! A buffer per thread to serialize answers in.
//!
//! An answer is serialized, then copied into the outbox. Serialized into a new `Vec`, every
//! answer would grow its buffer from nothing: a result of a few KiB takes several reallocations,
//! each a copy, and the allocator's work to merge what they free. Built in a buffer that stays
//! with the thread, a line costs no allocation once the buffer has grown to the answers' size.

use std::cell::RefCell;

/// A line that left the buffer larger than this gives it back to the allocator afterwards.
const KEEP_CAPACITY: usize = 64 * 1024;

thread_local! {
    static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `build` with an empty buffer of this thread's.
pub(super) fn with_line<T>(build: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    LINE.with(|line| {
        // Only reentrance could find it taken: `build` then gets a buffer of its own.
        let Ok(mut line) = line.try_borrow_mut() else {
            return build(&mut Vec::new());
        };
        line.clear();
        let result = build(&mut line);
        if line.capacity() > KEEP_CAPACITY {
            *line = Vec::new();
        }
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_starts_empty_and_a_large_one_is_not_kept() {
        with_line(|line| line.extend_from_slice(b"first"));
        let seen = with_line(|line| line.clone());
        assert!(seen.is_empty());
        with_line(|line| line.resize(KEEP_CAPACITY + 1, b'x'));
        let capacity = with_line(|line| line.capacity());
        assert!(capacity <= KEEP_CAPACITY);
    }

    #[test]
    fn a_nested_line_gets_a_buffer_of_its_own() {
        with_line(|outer| {
            outer.extend_from_slice(b"outer");
            with_line(|inner| {
                assert!(inner.is_empty());
                inner.extend_from_slice(b"inner");
            });
            assert_eq!(outer.as_slice(), b"outer");
        });
    }
}
