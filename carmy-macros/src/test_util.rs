//! Helpers for unit tests that check what an error says and which tokens it points at.

use proc_macro2::Span;

/// The text of `source` that `span` covers. Spans from `str::parse` carry line and column
/// information thanks to proc-macro2's `span-locations` feature (a dev-dependency).
pub(crate) fn covered(source: &str, span: Span) -> String {
    let (start, end) = (span.start(), span.end());
    let lines: Vec<&str> = source.lines().collect();
    if start.line == end.line {
        let line = lines[start.line - 1];
        return char_slice(line, start.column, end.column);
    }
    let mut text = char_slice(lines[start.line - 1], start.column, usize::MAX);
    for line in &lines[start.line..end.line - 1] {
        text.push('\n');
        text.push_str(line);
    }
    text.push('\n');
    text.push_str(&char_slice(lines[end.line - 1], 0, end.column));
    text
}

fn char_slice(line: &str, from: usize, to: usize) -> String {
    line.chars()
        .skip(from)
        .take(to.saturating_sub(from))
        .collect()
}

/// Each error's message and the source text it points at.
pub(crate) fn errors_of(source: &str, error: syn::Error) -> Vec<(String, String)> {
    error
        .into_iter()
        .map(|error| {
            let text = covered(source, error.span());
            (error.to_string(), text)
        })
        .collect()
}
