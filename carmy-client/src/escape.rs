//! Server text made harmless to show. A server's names, results, errors, log lines and
//! questions reach the user's terminal, where a control character starts a command: clear the
//! screen, set the window title, write the clipboard, plant a hyperlink. Every control
//! character from a server is therefore shown as an escape (`\x1b`, `\u{9b}`) instead.
//!
//! Human output is escaped whether or not stdout and stderr are a terminal: a file or a pipe
//! often ends on one later (`cat`, `less -R`), and what needs the exact text has `--json`,
//! whose strings carry the same characters as JSON escapes (`\u001b`), so their values are
//! untouched.
//!
//! Every sink applies one of these: stdout (`out.rs`), stderr (`progress.rs`, `elicit.rs`), the
//! last word of a failed run (`main.rs`). A value shown within a line (a table cell, a log
//! field, a URI) escapes its line breaks too, so that it cannot forge a row or a line.

use std::{borrow::Cow, fmt::Write as _};

/// What a piece of server text may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Several lines: line feeds and tabs stay, and so does a carriage return before a line
    /// feed (CRLF line ends); every other control character is escaped.
    Text,
    /// One value within a line: every control character is escaped, line breaks included.
    Field,
    /// JSON text as serde_json writes it: its only raw controls are DEL and C1 characters in
    /// strings (JSON allows them unescaped) and the line feeds of indentation; the first become
    /// `\u` escapes, which JSON reads back as the same characters.
    Json,
}

/// Text over several lines: a tool's result, a question, an error.
pub(crate) fn text(text: &str) -> Cow<'_, str> {
    escape(text, Style::Text)
}

/// One value within a line: a table cell, a log field, a URI.
pub(crate) fn field(text: &str) -> Cow<'_, str> {
    escape(text, Style::Field)
}

/// `value` as indented JSON, escaped as [`json`] escapes.
pub(crate) fn pretty(value: &serde_json::Value) -> String {
    json(serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()))
}

/// JSON text, unchanged in value.
pub(crate) fn json(text: String) -> String {
    match escape(&text, Style::Json) {
        Cow::Borrowed(_) => text,
        Cow::Owned(escaped) => escaped,
    }
}

fn escape(text: &str, style: Style) -> Cow<'_, str> {
    let kept = |c: char, next: Option<char>| match style {
        Style::Text => c == '\n' || c == '\t' || (c == '\r' && next == Some('\n')),
        Style::Field => false,
        Style::Json => c == '\n',
    };
    let mut chars = text.chars().peekable();
    let mut clean = 0;
    while let Some(c) = chars.next() {
        if c.is_control() && !kept(c, chars.peek().copied()) {
            break;
        }
        clean += c.len_utf8();
    }
    if clean == text.len() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..clean]);
    let mut chars = text[clean..].chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_control() || kept(c, chars.peek().copied()) {
            out.push(c);
            continue;
        }
        let code = u32::from(c);
        // Writing to a String cannot fail.
        let _ = match (style, c) {
            (Style::Json, _) => write!(out, "\\u{code:04x}"),
            (_, '\n') => write!(out, "\\n"),
            (_, '\r') => write!(out, "\\r"),
            (_, '\t') => write!(out, "\\t"),
            _ if code < 0x80 => write!(out, "\\x{code:02x}"),
            _ => write!(out, "\\u{{{code:x}}}"),
        };
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::{field, json, text};

    #[test]
    fn text_keeps_its_lines_and_escapes_every_other_control() {
        assert!(matches!(text("plain\n\ttext\r\n"), Cow::Borrowed(_)));
        assert_eq!(
            text("a\x1b]0;title\x07b\rc\u{9b}2J\u{7f}\nd"),
            r"a\x1b]0;title\x07b\rc\u{9b}2J\x7f".to_owned() + "\nd"
        );
        assert_eq!(text("end\r"), r"end\r");
    }

    #[test]
    fn a_field_stays_on_its_line() {
        assert_eq!(field("a\nb\tc\r\nd"), r"a\nb\tc\r\nd");
        assert!(matches!(field("naïve — ok"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_keeps_its_value() {
        let value = serde_json::json!({"text": "a\u{9b}b\u{7f}c\x1bd\n", "é": 1});
        let written = json(serde_json::to_string_pretty(&value).unwrap());
        assert!(!written.chars().any(|c| c.is_control() && c != '\n'));
        assert!(written.contains(r"a\u009bb\u007fc\u001bd\n"));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&written).unwrap(),
            value
        );
    }
}
