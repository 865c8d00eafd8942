//! Text an attacker sends, kept short wherever the runtime keeps or echoes it (records, error
//! messages, logs): the head of it, and how long it was.

use std::borrow::Cow;

/// `text` when it has at most `max` bytes; otherwise its first `max` bytes or fewer (cut at a
/// character boundary), then `…` and the length of the whole.
///
/// ```text
/// excerpt("search_products", 128) == "search_products"
/// excerpt(<4 MB of "a">, 16)      == "aaaaaaaaaaaaaaaa… (4194304 bytes)"
/// ```
pub(crate) fn excerpt(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!("{}… ({} bytes)", &text[..cut], text.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_and_long_text_is_cut_at_a_character() {
        assert_eq!(excerpt("lookup", 8), "lookup");
        assert!(matches!(excerpt("lookup", 6), Cow::Borrowed(_)));
        assert_eq!(excerpt("lookups", 6), "lookup… (7 bytes)");
        // 'é' is two bytes: the cut never splits it.
        assert_eq!(excerpt("ééé", 3), "é… (6 bytes)");
        let long = "a".repeat(4 << 20);
        assert_eq!(excerpt(&long, 4).len(), "aaaa… (4194304 bytes)".len());
    }
}
