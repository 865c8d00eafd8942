//! What the macro emits when a check fails: the user's item, unchanged, and the errors.
//!
//! Keeping the function means the rest of the crate still resolves it, so one mistake in a
//! `#[tool]` gives the errors about that mistake and not a cascade of "cannot find `search`"
//! (and IDEs keep completing inside the body).

use proc_macro2::TokenStream;

pub(crate) fn item_with_errors(item: TokenStream, error: syn::Error) -> TokenStream {
    let mut tokens = item;
    tokens.extend(error.into_compile_error());
    tokens
}
