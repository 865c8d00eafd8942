//! The checked tool: the arguments, the signature, and the rules that involve both.
//!
//! Phases run in order and stop between them: the item must be a function; then the attribute's
//! arguments and the signature are each checked in full (they are independent, so their errors
//! are reported together); then the rules across them. Code generation (`expand.rs`) only ever
//! sees a `ToolDef` that passed every check.

use proc_macro2::TokenStream;
use syn::{Attribute, ext::IdentExt};

use crate::{
    args::Args, description, errors::Errors, item::ItemFn, name, signature::ToolSignature,
};

pub(crate) struct ToolDef {
    pub(crate) args: Args,
    pub(crate) item: ItemFn,
    pub(crate) signature: ToolSignature,
    /// `name = "..."`, or the function's name.
    pub(crate) name: String,
    /// `description = "..."`, or the doc comment.
    pub(crate) description: Option<String>,
}

impl ToolDef {
    pub(crate) fn new(args: TokenStream, item: TokenStream) -> syn::Result<ToolDef> {
        let item = ItemFn::parse(item)?;

        let mut errors = Errors::default();
        let args = errors.ok(Args::parse(args));
        let signature = errors.ok(ToolSignature::check(&item.sig));
        errors.finish()?;
        let (args, signature) = (args.expect("checked"), signature.expect("checked"));

        let name = match &args.name {
            Some(name) => name.value(),
            None => default_name(&item)?,
        };
        let description = match &args.description {
            Some(description) => Some(description.value()),
            None => description::from_docs(&item.attrs),
        };
        Ok(ToolDef {
            args,
            item,
            signature,
            name,
            description,
        })
    }

    /// `#[cfg(..)]` attributes: they apply to everything generated.
    pub(crate) fn cfgs(&self) -> impl Iterator<Item = &Attribute> {
        self.item
            .attrs
            .iter()
            .filter(|attr| attr.path().is_ident("cfg"))
    }

    /// Doc comments: they document both the struct and `call`.
    pub(crate) fn docs(&self) -> impl Iterator<Item = &Attribute> {
        self.item
            .attrs
            .iter()
            .filter(|attr| attr.path().is_ident("doc"))
    }

    /// Every other attribute (`#[tracing::instrument]`, lint levels...) belongs to the function
    /// body, now `call`.
    pub(crate) fn fn_attrs(&self) -> impl Iterator<Item = &Attribute> {
        self.item
            .attrs
            .iter()
            .filter(|attr| !attr.path().is_ident("cfg") && !attr.path().is_ident("doc"))
    }
}

/// The function's name (`r#type` is `type`), if MCP accepts it.
fn default_name(item: &ItemFn) -> syn::Result<String> {
    let ident = &item.sig.ident;
    let name = ident.unraw().to_string();
    name::check(&name).map_err(|reason| {
        syn::Error::new(
            ident.span(),
            format!(
                "the function name `{name}` is not a valid tool name: {reason}; set one with \
                 `#[tool(name = \"...\")]` ({})",
                name::RULE
            ),
        )
    })?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::errors_of;

    fn tool(args: &str, item: &str) -> syn::Result<ToolDef> {
        ToolDef::new(args.parse().unwrap(), item.parse().unwrap())
    }

    const SEARCH: &str = "/// Search the catalog.\n#[cfg(feature = \"shop\")]\n#[tracing::instrument]\n\
                          pub async fn search(input: SearchInput) -> Result<SearchOutput, AgentError> { todo!() }";

    #[test]
    fn names_and_descriptions_default_to_the_function() {
        let tool = tool(r#"effect = "read""#, SEARCH).unwrap();
        assert_eq!(tool.name, "search");
        assert_eq!(tool.description.as_deref(), Some("Search the catalog."));
        assert_eq!(
            (
                tool.docs().count(),
                tool.cfgs().count(),
                tool.fn_attrs().count()
            ),
            (1, 1, 1)
        );

        let tool = self::tool(
            r#"effect = "read", name = "catalog.search", description = "Find products.""#,
            SEARCH,
        )
        .unwrap();
        assert_eq!(tool.name, "catalog.search");
        assert_eq!(tool.description.as_deref(), Some("Find products."));
    }

    #[test]
    fn raw_identifiers_lose_their_prefix() {
        let tool = tool(
            r#"effect = "none""#,
            "async fn r#type() -> Result<(), E> {}",
        )
        .unwrap();
        assert_eq!(tool.name, "type");
        assert_eq!(tool.description, None);
    }

    #[test]
    fn a_function_name_mcp_refuses_needs_an_explicit_name() {
        let item = "async fn café() -> Result<(), E> {}";
        let errors = errors_of(item, tool(r#"effect = "none""#, item).err().unwrap());
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].1, "café");
        assert!(
            errors[0].0.starts_with(
                "the function name `café` is not a valid tool name: 'é' is not allowed; \
                 set one with `#[tool(name = \"...\")]`"
            ),
            "{}",
            errors[0].0
        );
        assert!(tool(r#"effect = "none", name = "cafe""#, item).is_ok());
    }

    #[test]
    fn argument_and_signature_errors_are_reported_together() {
        let error = tool(r#"effect = "reed""#, "fn search(a: A, b: B) {}")
            .err()
            .unwrap();
        let messages: Vec<_> = error.into_iter().map(|error| error.to_string()).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(messages[0].starts_with("unknown effect `reed`"));
        assert!(messages[1].starts_with("a tool must be an `async fn`"));
    }
}
