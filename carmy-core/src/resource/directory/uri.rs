//! `file://` URIs and the paths they name, checked without touching the disk.
//!
//! This is the first of the two walls between a client's URI and the files outside the root
//! (the second, in `open.rs`, walks the path from the root and decides where links lead). A URI is
//! accepted only in the form the listing writes: `file://` (no host, or `localhost`), the
//! canonical root, then one or more non-empty segments, decoded once. Everything that could
//! mean a different path to some other reader is refused rather than normalized: `.` and `..`
//! segments (raw or percent-encoded, in any case), backslashes (raw or `%5C`: a separator on
//! some systems), NUL bytes (raw or `%00`: a string end to C), empty segments, a query or a
//! fragment, bad escapes and bytes that are not UTF-8. A path outside the root is refused
//! before the file system is asked anything, so its answer says nothing of what is there.

use percent_encoding::{AsciiSet, utf8_percent_encode};

use super::codes;
use crate::{error::AgentError, excerpt::excerpt, percent, resource::MAX_URI_LEN};

/// How much of a URI an error message quotes.
const MAX_ECHO: usize = 256;

/// What a path's bytes are escaped against: the unreserved ones and `/` are kept.
const PATH: &AsciiSet = &percent::UNRESERVED.remove(b'/');

/// `file://` and `path`, percent-encoded: every byte but the unreserved ones and `/`.
pub(super) fn uri_of(path: &str) -> String {
    let mut uri = String::with_capacity(7 + path.len());
    uri.push_str("file://");
    uri.extend(utf8_percent_encode(path, PATH));
    uri
}

/// The path part of a `file:` URI (after the authority), or `None` for another scheme or
/// form. The authority is returned apart, unchecked.
fn split(uri: &str) -> Option<(&str, &str)> {
    let scheme = uri.get(..5)?;
    if !scheme.eq_ignore_ascii_case("file:") {
        return None;
    }
    let rest = uri[5..].strip_prefix("//")?;
    let at = rest.find('/').unwrap_or(rest.len());
    Some((&rest[..at], &rest[at..]))
}

/// Whether `uri` is a `file:` URI whose path, decoded, lies under `root` as written (no check
/// beyond that: `locate` refuses what is claimed but wrong, with a reason).
pub(super) fn claims(root: &str, uri: &str) -> bool {
    if uri.len() > MAX_URI_LEN {
        return false;
    }
    let Some((_, path)) = split(uri) else {
        return false;
    };
    let decoded = decode_lossy(path);
    decoded
        .strip_prefix(root.as_bytes())
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

/// The segments below `root` that `uri` names, each a plain file or directory name; or why it
/// names nothing that may be served. `hidden`: whether names starting with `.` are served.
pub(super) fn locate(root: &str, uri: &str, hidden: bool) -> Result<Vec<String>, AgentError> {
    let invalid = |reason: &str| {
        AgentError::not_found(
            codes::INVALID_FILE_URI,
            format!(
                "`{}` is not a file this server serves: {reason}",
                excerpt(uri, MAX_ECHO)
            ),
        )
        .with_details(serde_json::json!({ "uri": excerpt(uri, MAX_ECHO), "reason": reason }))
    };
    if uri.len() > MAX_URI_LEN {
        return Err(invalid("the URI is too long"));
    }
    let Some((host, path)) = split(uri) else {
        return Err(invalid("only `file:///absolute/path` URIs are served"));
    };
    if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
        return Err(invalid(
            "it names another host; only `file:///...` or `file://localhost/...` is served",
        ));
    }
    if path.contains(['?', '#']) {
        return Err(invalid("a file URI has no query or fragment"));
    }
    if path.contains('\\') {
        return Err(invalid("backslashes are refused"));
    }
    let Some(decoded) = percent::decode(path) else {
        return Err(invalid("a `%` is not followed by two hex digits"));
    };
    if decoded.contains(&0) {
        return Err(invalid("NUL bytes are refused"));
    }
    if decoded.contains(&b'\\') {
        return Err(invalid("backslashes are refused"));
    }
    let Ok(decoded) = String::from_utf8(decoded) else {
        return Err(invalid("the path is not UTF-8"));
    };
    let rest = match decoded.strip_prefix(root) {
        Some("") => {
            return Err(AgentError::resource_not_found(&excerpt(uri, MAX_ECHO)));
        }
        Some(rest) if rest.starts_with('/') => &rest[1..],
        _ => {
            return Err(AgentError::not_found(
                codes::OUTSIDE_ROOT,
                format!(
                    "`{}` is outside the served directory",
                    excerpt(uri, MAX_ECHO)
                ),
            )
            .with_details(serde_json::json!({ "uri": excerpt(uri, MAX_ECHO) })));
        }
    };
    let mut segments = Vec::new();
    for segment in rest.split('/') {
        match segment {
            "" => return Err(invalid("empty path segments are refused")),
            "." | ".." => return Err(invalid("`.` and `..` segments are refused")),
            hidden_name if !hidden && hidden_name.starts_with('.') => {
                return Err(AgentError::resource_not_found(&excerpt(uri, MAX_ECHO)));
            }
            name => segments.push(name.to_owned()),
        }
    }
    Ok(segments)
}

/// `%XX` escapes decoded once, broken ones kept as they are: only to decide what is claimed.
fn decode_lossy(text: &str) -> Vec<u8> {
    percent::decode(text).unwrap_or_else(|| text.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/srv/docs";

    fn located(uri: &str) -> Result<Vec<String>, String> {
        locate(ROOT, uri, false).map_err(|error| error.code().to_owned())
    }

    #[test]
    fn the_listing_form_round_trips() {
        let uri = uri_of("/srv/docs/policies/returns and refunds.md");
        assert_eq!(uri, "file:///srv/docs/policies/returns%20and%20refunds.md");
        assert!(claims(ROOT, &uri));
        assert_eq!(
            located(&uri),
            Ok(vec!["policies".into(), "returns and refunds.md".into()])
        );
        assert_eq!(
            located("FILE://localhost/srv/docs/a.md"),
            Ok(vec!["a.md".into()])
        );
        assert_eq!(
            located("file://LOCALHOST/srv/docs/a.md"),
            Ok(vec!["a.md".into()])
        );
        // Decoded once: `%252e` is a file named `%2e`, inside the root.
        assert_eq!(
            located("file:///srv/docs/%252e%252e"),
            Ok(vec!["%2e%2e".into()])
        );
        assert_eq!(
            located("file:///srv/docs/caf%C3%A9.md"),
            Ok(vec!["café.md".into()])
        );
    }

    #[test]
    fn every_way_out_is_refused_before_the_disk_is_asked() {
        for uri in [
            "file:///srv/docs/../secret",
            "file:///srv/docs/a/../../secret",
            "file:///srv/docs/%2e%2e/secret",
            "file:///srv/docs/%2E%2E/secret",
            "file:///srv/docs/%2e%2E/secret",
            "file:///srv/docs/.%2e/secret",
            "file:///srv/docs/%2e./secret",
            "file:///srv/docs/%2e%2e%2fsecret",
            "file:///srv/docs/a%2f..%2f..%2fsecret",
            "file:///srv/docs/./a.md",
            "file:///srv/docs/%2e/a.md",
            "file:///srv/docs/..\\secret",
            "file:///srv/docs/..%5csecret",
            "file:///srv/docs/..%5Csecret",
            "file:///srv/docs/a.md%00.txt",
            "file:///srv/docs/a.md\0.txt",
            "file:///srv/docs//a.md",
            "file:///srv/docs/a/",
            "file:///srv/docs/a.md?x=1",
            "file:///srv/docs/a.md#top",
            "file:///srv/docs/%zz",
            "file:///srv/docs/%4",
            "file:///srv/docs/%ff%fe",
            "file://evil.example/srv/docs/a.md",
            "file://localhost:80/srv/docs/a.md",
            "file://user@localhost/srv/docs/a.md",
            "file://127.0.0.1/srv/docs/a.md",
            "file:/srv/docs/a.md",
            "file:srv/docs/a.md",
            "http:///srv/docs/a.md",
            "/srv/docs/a.md",
        ] {
            assert_eq!(
                located(uri).map_err(|code| code == codes::INVALID_FILE_URI),
                Err(true),
                "{uri:?}"
            );
        }
        for uri in [
            "file:///srv/secret",
            "file:///srv/docsecret/a.md",
            "file:///etc/passwd",
            "file:///srv/%64ocs2/a.md",
            "file:///",
        ] {
            assert_eq!(located(uri), Err(codes::OUTSIDE_ROOT.to_owned()), "{uri:?}");
        }
        // Hidden files are not served unless asked; the root itself is no file.
        for uri in [
            "file:///srv/docs/.env",
            "file:///srv/docs/.git/config",
            "file:///srv/docs/%2egit/config",
            "file:///srv/docs",
        ] {
            assert_eq!(
                located(uri),
                Err("RESOURCE_NOT_FOUND".to_owned()),
                "{uri:?}"
            );
        }
        assert_eq!(
            locate(ROOT, "file:///srv/docs/.env", true).map_err(|e| e.code().to_owned()),
            Ok(vec![".env".to_owned()])
        );
        let long = format!("file:///srv/docs/{}", "a".repeat(MAX_URI_LEN));
        assert!(!claims(ROOT, &long));
        assert_eq!(located(&long), Err(codes::INVALID_FILE_URI.to_owned()));
    }

    #[test]
    fn claims_are_what_lies_lexically_under_the_root() {
        assert!(claims(ROOT, "file:///srv/docs/a.md"));
        assert!(
            claims(ROOT, "file:///srv/docs/../secret"),
            "claimed, then refused"
        );
        assert!(
            claims(ROOT, "file://evil/srv/docs/a.md"),
            "claimed, then refused"
        );
        assert!(claims(ROOT, "file:///srv/doc%73/a.md"));
        assert!(!claims(ROOT, "file:///srv/docsecret"));
        assert!(!claims(ROOT, "file:///etc/passwd"));
        assert!(!claims(ROOT, "shop://srv/docs/a.md"));
        assert!(!claims(ROOT, "file"));
    }
}
