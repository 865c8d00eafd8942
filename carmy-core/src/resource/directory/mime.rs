//! MIME types by file extension, and which of them are text.
//!
//! A small table rather than a crate: what an MCP client does with a file depends on a few
//! dozen types (documents, data, code, images), an unknown extension is sniffed at read time
//! (UTF-8 without NUL bytes is `text/plain`), and the whole mapping is here to audit. A crate
//! like `mime_guess` knows every registered type at the cost of a generated table and two
//! dependencies; swap it in if a deployment serves exotic files.

/// Extension (lower case) → MIME type.
const TABLE: &[(&str, &str)] = &[
    // Documents and text.
    ("md", "text/markdown"),
    ("markdown", "text/markdown"),
    ("txt", "text/plain"),
    ("text", "text/plain"),
    ("log", "text/plain"),
    ("rst", "text/x-rst"),
    ("adoc", "text/asciidoc"),
    ("html", "text/html"),
    ("htm", "text/html"),
    ("css", "text/css"),
    ("csv", "text/csv"),
    ("tsv", "text/tab-separated-values"),
    ("ics", "text/calendar"),
    // Data.
    ("json", "application/json"),
    ("jsonl", "application/jsonl"),
    ("ndjson", "application/x-ndjson"),
    ("xml", "application/xml"),
    ("yaml", "application/yaml"),
    ("yml", "application/yaml"),
    ("toml", "application/toml"),
    ("ini", "text/plain"),
    ("sql", "application/sql"),
    // Code.
    ("js", "text/javascript"),
    ("mjs", "text/javascript"),
    ("ts", "text/typescript"),
    ("py", "text/x-python"),
    ("rs", "text/x-rust"),
    ("go", "text/x-go"),
    ("java", "text/x-java"),
    ("c", "text/x-c"),
    ("h", "text/x-c"),
    ("cpp", "text/x-c++"),
    ("sh", "application/x-sh"),
    // Images.
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("svg", "image/svg+xml"),
    ("ico", "image/vnd.microsoft.icon"),
    // Other binaries.
    ("pdf", "application/pdf"),
    ("zip", "application/zip"),
    ("gz", "application/gzip"),
    ("tar", "application/x-tar"),
    ("wasm", "application/wasm"),
    ("mp3", "audio/mpeg"),
    ("wav", "audio/wav"),
    ("mp4", "video/mp4"),
    ("woff2", "font/woff2"),
];

/// The MIME type of `file_name` by its extension, if the table knows it.
pub(super) fn of(file_name: &str) -> Option<&'static str> {
    let (_, extension) = file_name.rsplit_once('.')?;
    TABLE
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(extension))
        .map(|(_, mime)| *mime)
}

/// Whether contents of `mime` are text (read as `text` when they are UTF-8).
pub(super) fn is_text(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/jsonl"
                | "application/x-ndjson"
                | "application/xml"
                | "application/yaml"
                | "application/toml"
                | "application/sql"
                | "application/x-sh"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_matched_in_any_case_and_only_at_the_end() {
        assert_eq!(of("returns.md"), Some("text/markdown"));
        assert_eq!(of("LOGO.PNG"), Some("image/png"));
        assert_eq!(of("archive.tar.gz"), Some("application/gzip"));
        assert_eq!(of("Makefile"), None);
        assert_eq!(of("notes.unknown"), None);
        assert!(
            is_text("text/markdown") && is_text("image/svg+xml") && is_text("application/json")
        );
        assert!(!is_text("image/png") && !is_text("application/pdf"));
        for (extension, mime) in TABLE {
            assert_eq!(*extension, extension.to_ascii_lowercase(), "{extension}");
            assert!(mime.contains('/'), "{mime}");
        }
    }
}
