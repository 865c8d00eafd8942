//! The tool's description, from its doc comment.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The doc comment's text with the common indentation removed (the space after `///`) and
/// surrounding blank lines dropped; `None` when there is no doc comment.
///
/// `#[doc = include_str!(..)]` and other non-literal docs are skipped: their text is not known
/// when the macro runs. Such tools can set `description = "..."`.
pub(crate) fn from_docs(attrs: &[Attribute]) -> Option<String> {
    let docs: Vec<String> = attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(doc) if doc.path.is_ident("doc") => match &doc.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(lit), ..
                }) => Some(lit.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    // A `/** */` comment is one attribute with several lines; an empty `///` is an empty one.
    let lines: Vec<&str> = docs.iter().flat_map(|doc| doc.split('\n')).collect();
    let indent = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.chars().take_while(|c| c.is_whitespace()).count())
        .min()?;
    let text = lines
        .iter()
        .map(|line| {
            let dedented: String = line.chars().skip(indent).collect();
            dedented.trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim_matches('\n');
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use syn::parse::Parser;

    use super::*;

    fn description(source: &str) -> Option<String> {
        let attrs = Attribute::parse_outer.parse_str(source).unwrap();
        from_docs(&attrs)
    }

    #[test]
    fn line_comments_lose_the_leading_space() {
        assert_eq!(
            description(
                "/// Search the catalog.\n///\n/// Returns at most `limit` items.\n///   - indented\n#[inline]"
            ),
            Some("Search the catalog.\n\nReturns at most `limit` items.\n  - indented".to_owned())
        );
    }

    #[test]
    fn block_comments_are_dedented() {
        assert_eq!(
            description("/**\n    Cancel an order.\n\n    Cannot be undone.\n */"),
            Some("Cancel an order.\n\nCannot be undone.".to_owned())
        );
    }

    #[test]
    fn no_docs_no_description() {
        assert_eq!(description("#[inline]"), None);
        assert_eq!(description("///\n///   "), None);
        assert_eq!(description("#[doc = include_str!(\"x.md\")]"), None);
    }
}
