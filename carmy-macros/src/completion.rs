//! `complete(order_id = order_ids, focus = focuses)`: completion declared next to what it
//! completes, on `#[prompt]` (its arguments) and `#[resource]` (its template's variables).
//!
//! Each entry names an argument and the `async fn` that suggests its values. The macro turns the
//! list into the trait's `COMPLETES` and a `complete` that dispatches on the argument's name;
//! the runtime only asks about the names in `COMPLETES`.
//!
//! A completer is a path, not a closure or a trait to implement: one plain function per
//! argument, which unit tests can call like any other, and which the expansion names where a
//! reader expects it. The macro never sees its signature. Each call goes through
//! `__private::complete_with`, whose bounds take `&str` (what the user typed) or
//! `CompletionRequest<'_>` in and `Result<Completions, E>` or `Result<Vec<String>, E>` out; the
//! call is spanned on the path, so a completer of the wrong shape is one error there.
//!
//! What the attribute alone shows is checked here: the shape of the key and a name given
//! twice. Rules that need more are the attribute's: a name that is no variable of the template
//! (`resource.rs`), a prompt without an input to take arguments (`prompt.rs`). Whether a
//! prompt's argument is a field of its input needs the type, which the macro never reads:
//! `build()` refuses it, naming the prompt.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::quote;
use syn::{
    Expr, ExprPath, Ident, LitStr, MacroDelimiter, Meta, MetaList, Token,
    ext::IdentExt,
    parse::{ParseStream, Parser},
    spanned::Spanned,
};

use crate::{errors::Errors, kind::Kind, tokens};

/// A checked `complete(...)`.
pub(crate) struct Complete {
    /// The key as written, for errors about the whole list.
    pub(crate) list: MetaList,
    /// In the order written, each name once.
    pub(crate) completers: Vec<Completer>,
}

/// `order_id = order_ids`.
pub(crate) struct Completer {
    /// The argument's name (`r#type` is `type`), spanned on the name as written.
    pub(crate) name: LitStr,
    /// The completer, used as written.
    pub(crate) path: ExprPath,
}

impl Complete {
    /// Reads `complete(...)`, reporting every entry that is not a path and every name given
    /// twice; a syntax error stops the reading.
    pub(crate) fn parse(meta: &Meta, kind: Kind) -> syn::Result<Complete> {
        let example = kind.example_complete();
        let list = match meta {
            Meta::List(list) if matches!(list.delimiter, MacroDelimiter::Paren(_)) => list,
            _ => {
                return Err(syn::Error::new_spanned(
                    meta,
                    format!(
                        "expected `complete(...)` naming, for each {} to complete, the async fn \
                         that suggests its values, e.g. `{example}`",
                        kind.completed()
                    ),
                ));
            }
        };
        let entries =
            (|input: ParseStream<'_>| entries(input, kind)).parse2(list.tokens.clone())?;
        if entries.is_empty() {
            return Err(syn::Error::new_spanned(
                list,
                format!(
                    "`complete()` names no {}; name one and its completer, e.g. `{example}`, or \
                     remove `complete()`",
                    kind.completed()
                ),
            ));
        }

        let mut errors = Errors::default();
        let mut completers = Vec::new();
        let mut seen = Vec::new();
        for (name, value) in entries {
            let name_value = name.value();
            if seen.contains(&name_value) {
                errors.push(syn::Error::new(
                    name.span(),
                    format!(
                        "`{name_value}` is completed twice; name one completer for each {}",
                        kind.completed()
                    ),
                ));
                continue;
            }
            seen.push(name_value.clone());
            match value {
                Expr::Path(path) if path.attrs.is_empty() => {
                    completers.push(Completer { name, path });
                }
                other => errors.push(syn::Error::new_spanned(
                    other,
                    format!(
                        "expected the path to the async fn that suggests values for \
                         `{name_value}`, e.g. `{name_value} = {}`: a function taking `&str` or \
                         `CompletionRequest<'_>` and returning `Result<Completions, E>` or \
                         `Result<Vec<String>, E>`",
                        suggested_completer(&name_value)
                    ),
                )),
            }
        }
        errors.finish()?;
        Ok(Complete {
            list: list.clone(),
            completers,
        })
    }

    /// The names, in order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &LitStr> {
        self.completers.iter().map(|completer| &completer.name)
    }
}

/// `name = value, ...`, the values still unchecked.
fn entries(input: ParseStream<'_>, kind: Kind) -> syn::Result<Vec<(LitStr, Expr)>> {
    let mut entries = Vec::new();
    while !input.is_empty() {
        let name = if input.peek(LitStr) {
            input.parse::<LitStr>()?
        } else if input.peek(Ident::peek_any) {
            let ident = Ident::parse_any(input)?;
            LitStr::new(&ident.unraw().to_string(), ident.span())
        } else {
            return Err(input.error(format!(
                "expected the name of an {} to complete (an identifier, or a string such as \
                 `\"order-id\"`), e.g. `{}`",
                kind.completed(),
                kind.example_complete()
            )));
        };
        if !input.peek(Token![=]) {
            let span = name.span();
            let name = name.value();
            return Err(syn::Error::new(
                span,
                format!(
                    "expected `{name} = completer`, the path to the async fn that suggests \
                     values for `{name}`, e.g. `{name} = {}`",
                    suggested_completer(&name)
                ),
            ));
        }
        input.parse::<Token![=]>()?;
        let value: Expr = input.parse()?;
        entries.push((name, value));
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(entries)
}

/// `order_ids` for `order_id`: what an example calls a completer.
fn suggested_completer(name: &str) -> String {
    let snake: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    // `focus` → `focuses`, `order_id` → `order_ids`.
    if snake.ends_with('s') {
        format!("{snake}es")
    } else {
        format!("{snake}s")
    }
}

/// `const COMPLETES` and `async fn complete` in the trait's impl, or nothing without
/// `complete(...)` (the trait's defaults: nothing completes).
pub(crate) fn items(complete: Option<&Complete>) -> Option<TokenStream> {
    let complete = complete?;
    let private = tokens::private();
    let names: Vec<_> = complete.names().collect();
    let calls = complete.completers.iter().map(|completer| {
        let path = &completer.path;
        // The call is located at the path, so rustc reports a completer of the wrong shape
        // there and not on the attribute; the path's own tokens keep their spans and hygiene.
        let span = Span::call_site().located_at(path.span());
        let callee = tokens::at(span, quote!(#private::complete_with));
        let mut args = Group::new(Delimiter::Parenthesis, quote!(#path, __carmy_request));
        args.set_span(span);
        quote!(#callee #args.await)
    });
    Some(quote! {
        const COMPLETES: &'static [&'static str] = &[#(#names),*];

        async fn complete(
            &self,
            __carmy_request: #private::CompletionRequest<'_>,
        ) -> #private::Result<#private::Completions, #private::AgentError> {
            match __carmy_request.argument() {
                #(#names => #calls,)*
                // The runtime asks about the names in `COMPLETES` only.
                _ => #private::Ok(#private::Completions::none()),
            }
        }
    })
}
