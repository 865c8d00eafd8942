//! Two helpers every part of the generated code uses: the short name of the runtime's hidden
//! module, and tokens moved to a span of the user's code.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::quote;

/// Inside the `const _` block, `__carmy` names the runtime's `__private` module: the paths stay
/// absolute and the expansion stays short.
pub(crate) fn private() -> TokenStream {
    quote!(__carmy)
}

/// `tokens`, reported at `span`: a type error in them lands on the user's code rather than on
/// the attribute. Only the location changes; names still resolve at the call site, so the
/// `__carmy_` locals keep working when the tool is written inside a `macro_rules!`. Apart from
/// the tool's name (items are not hygienic), never pass the user's tokens through this: their
/// hygiene (`$crate`, locals) must stay theirs.
pub(crate) fn at(span: Span, tokens: TokenStream) -> TokenStream {
    let span = Span::call_site().located_at(span);
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) => {
                let mut respanned = Group::new(group.delimiter(), at(span, group.stream()));
                respanned.set_span(span);
                TokenTree::Group(respanned)
            }
            mut token => {
                token.set_span(span);
                token
            }
        })
        .collect()
}
