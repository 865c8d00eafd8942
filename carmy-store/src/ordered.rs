//! Unsigned integers kept as SQL's signed ones without losing their order: a redeemed token's
//! issue instant and nonce are `u64`s, and the databases compare `i64`s.

/// `value` as an `i64` in the same order: the top bit flipped.
pub(crate) fn ordered(value: u64) -> i64 {
    i64::from_ne_bytes((value ^ (1 << 63)).to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::ordered;

    #[test]
    fn ordered_keeps_the_order_of_every_u64() {
        let values = [
            0,
            1,
            1 << 62,
            (1 << 63) - 1,
            1 << 63,
            u64::MAX - 1,
            u64::MAX,
        ];
        for pair in values.windows(2) {
            assert!(ordered(pair[0]) < ordered(pair[1]), "{pair:?}");
        }
        assert_eq!(ordered(1 << 63), 0);
    }
}
