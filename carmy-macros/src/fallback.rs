//! What the macro emits when a check fails: the errors, plus either the tool expanded with
//! default arguments (when only the attribute or a rule was wrong) or the user's item unchanged
//! (when the signature was).
//!
//! Either way the name the user wrote still exists, so one mistake in a `#[tool]` gives the
//! errors about that mistake and not a cascade of "cannot find `search`" or "`search` is not a
//! Carmy tool" at every use, and IDEs keep completing inside the body.

use proc_macro2::TokenStream;

use crate::{expand, tool::Failure};

pub(crate) fn expansion(item: TokenStream, failure: Failure) -> TokenStream {
    let mut tokens = match &failure.fallback {
        Some(tool) => expand::tool(tool),
        None => item,
    };
    tokens.extend(failure.error.into_compile_error());
    tokens
}
