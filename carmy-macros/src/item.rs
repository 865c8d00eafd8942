//! The annotated item: attributes, visibility and signature, with the body left unparsed.
//!
//! Like `#[tokio::main]`, the body is kept as tokens: the macro never looks inside it, and a
//! body using syntax newer than `syn` still expands.

use proc_macro2::{Delimiter, Group, TokenStream};
use syn::{
    Attribute, Signature, Visibility,
    parse::{Parse, ParseStream},
};

use crate::kind::Kind;

pub(crate) struct ItemFn {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    /// The braced body, braces included.
    pub(crate) body: Group,
}

impl ItemFn {
    pub(crate) fn parse(item: TokenStream, kind: Kind) -> syn::Result<ItemFn> {
        syn::parse2(item.clone()).map_err(|_| {
            syn::Error::new_spanned(
                item,
                format!(
                    "`#[{}]` applies to an `async fn`, e.g. `{}`",
                    kind.attribute(),
                    kind.example_fn()
                ),
            )
        })
    }

    /// `#[cfg(..)]` attributes: they apply to everything generated.
    pub(crate) fn cfgs(&self) -> impl Iterator<Item = &Attribute> {
        self.attrs.iter().filter(|attr| attr.path().is_ident("cfg"))
    }

    /// Doc comments: they document both the struct and `call`.
    pub(crate) fn docs(&self) -> impl Iterator<Item = &Attribute> {
        self.attrs.iter().filter(|attr| attr.path().is_ident("doc"))
    }

    /// Every other attribute (`#[tracing::instrument]`, lint levels...) belongs to the function
    /// body, now `call`.
    pub(crate) fn fn_attrs(&self) -> impl Iterator<Item = &Attribute> {
        self.attrs
            .iter()
            .filter(|attr| !attr.path().is_ident("cfg") && !attr.path().is_ident("doc"))
    }
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        let body: Group = input.parse()?;
        if body.delimiter() != Delimiter::Brace || !input.is_empty() {
            return Err(input.error("expected a function body"));
        }
        Ok(ItemFn {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_kept_as_tokens() {
        let item = ItemFn::parse(
            "/// Docs.\n#[inline] pub(crate) async fn f(x: u8) -> Result<u8, E> { x.await?.future_syntax!!! }"
                .parse()
                .unwrap(),
            Kind::Tool,
        )
        .unwrap();
        assert_eq!(item.attrs.len(), 2);
        assert!(matches!(item.vis, Visibility::Restricted(_)));
        assert_eq!(item.sig.ident, "f");
        assert!(item.body.to_string().contains("future_syntax"));
    }

    #[test]
    fn anything_but_a_function_is_refused() {
        for source in ["struct S;", "fn f();", "mod m {}"] {
            let error = ItemFn::parse(source.parse().unwrap(), Kind::Tool)
                .err()
                .unwrap();
            assert!(
                error
                    .to_string()
                    .starts_with("`#[tool]` applies to an `async fn`")
            );
        }
        let error = ItemFn::parse("struct S;".parse().unwrap(), Kind::Resource)
            .err()
            .unwrap();
        assert_eq!(
            error.to_string(),
            "`#[resource]` applies to an `async fn`, e.g. \
             `async fn product(input: ProductRef) -> Result<String, AgentError>`"
        );
    }
}
