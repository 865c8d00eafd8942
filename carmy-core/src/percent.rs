//! Percent-encoding (`%XX`), one way for the crate: resource templates and file URIs escape
//! with the `percent-encoding` crate over RFC 3986's unreserved set, and decode strictly. Ground
//! level: it knows nothing of the crate, so both may use it.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode};

/// Every byte escaped but RFC 3986's unreserved ones: `A-Z a-z 0-9 - . _ ~`.
pub(crate) const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `%XX` escapes decoded once; `None` if a `%` is not followed by two hex digits. The crate's
/// decoder would keep such a `%` as it is; a URI that could be read two ways is refused instead.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let whole = bytes
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'%')
        .all(|(at, _)| {
            bytes
                .get(at + 1..at + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
        });
    whole.then(|| percent_decode(bytes).collect())
}
