//! What the macro emits when a check fails: the errors, plus either the function expanded with
//! default arguments (when only the attribute or a rule was wrong) or the user's item unchanged
//! (when the signature was).
//!
//! Either way the name the user wrote still exists, so one mistake in a `#[tool]` or a
//! `#[resource]` gives the errors about that mistake and not a cascade of "cannot find
//! `search`" or "`search` is not a Carmy tool" at every use, and IDEs keep completing inside the
//! body.

use proc_macro2::TokenStream;

use crate::function::{Failure, Function};

/// `expand` is the attribute's code generation, given the fallback when there is one.
pub(crate) fn expansion<A>(
    item: TokenStream,
    failure: Failure<A>,
    expand: fn(&Function<A>) -> TokenStream,
) -> TokenStream {
    let mut tokens = match &failure.fallback {
        Some(function) => expand(function),
        None => item,
    };
    tokens.extend(failure.error.into_compile_error());
    tokens
}
