//! The checked tool: the arguments, the signature, and the rules that involve both.
//!
//! Phases run in order and stop between them: the item must be a function; then the attribute's
//! arguments and the signature are each checked in full (they are independent, so their errors
//! are reported together); then the rules across them. Code generation (`expand.rs`) only sees
//! a `ToolDef` that passed every check, or the fallback of a tool whose signature is fine.

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

/// Every error found, and what to emit alongside them.
pub(crate) struct Failure {
    pub(crate) error: syn::Error,
    /// When only the attribute or a rule was wrong, the tool with default arguments: it still
    /// expands, so `Carmy::new().tool(search)` and `search(input)` elsewhere raise nothing more.
    /// `None` when the signature itself is wrong: then the function is emitted unchanged.
    pub(crate) fallback: Option<Box<ToolDef>>,
}

impl ToolDef {
    pub(crate) fn new(args: TokenStream, item: TokenStream) -> Result<ToolDef, Failure> {
        let without_fallback = |error| Failure {
            error,
            fallback: None,
        };
        let item = ItemFn::parse(item).map_err(without_fallback)?;

        let mut errors = Errors::default();
        let checked_args = errors.ok(Args::parse(args.clone()));
        let Some(signature) = errors.ok(ToolSignature::check(&item.sig)) else {
            return Err(without_fallback(errors.finish().expect_err("recorded")));
        };
        let Some(args) = checked_args.or_else(|| Args::fallback(args)) else {
            return Err(without_fallback(errors.finish().expect_err("recorded")));
        };

        let name = match &args.name {
            Some(name) => name.value(),
            None => {
                let name = item.sig.ident.unraw().to_string();
                errors.extend(check_default_name(&item, &name));
                name
            }
        };
        let description = match &args.description {
            Some(description) => Some(description.value()),
            None => description::from_docs(&item.attrs),
        };
        let tool = ToolDef {
            args,
            item,
            signature,
            name,
            description,
        };
        match errors.finish() {
            Ok(()) => Ok(tool),
            Err(error) => Err(Failure {
                error,
                fallback: Some(Box::new(tool)),
            }),
        }
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

/// A name taken from the function (`r#type` is `type`) must still suit MCP.
fn check_default_name(item: &ItemFn, name: &str) -> syn::Result<()> {
    name::check(name).map_err(|reason| {
        syn::Error::new(
            item.sig.ident.span(),
            format!(
                "the function name `{name}` is not a valid tool name: {reason}; set one with \
                 `#[tool(name = \"...\")]` ({})",
                name::RULE
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::errors_of;

    fn tool(args: &str, item: &str) -> Result<ToolDef, Failure> {
        ToolDef::new(args.parse().unwrap(), item.parse().unwrap())
    }

    fn error(args: &str, item: &str) -> Failure {
        tool(args, item).err().expect("expected an error")
    }

    fn checked(args: &str, item: &str) -> ToolDef {
        tool(args, item).unwrap_or_else(|failure| panic!("{}", failure.error))
    }

    const SEARCH: &str = "/// Search the catalog.\n#[cfg(feature = \"shop\")]\n#[tracing::instrument]\n\
                          pub async fn search(input: SearchInput) -> Result<SearchOutput, AgentError> { todo!() }";

    #[test]
    fn names_and_descriptions_default_to_the_function() {
        let tool = checked(r#"effect = "read""#, SEARCH);
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

        let tool = checked(
            r#"effect = "read", name = "catalog.search", description = "Find products.""#,
            SEARCH,
        );
        assert_eq!(tool.name, "catalog.search");
        assert_eq!(tool.description.as_deref(), Some("Find products."));
    }

    #[test]
    fn raw_identifiers_lose_their_prefix() {
        let tool = checked(
            r#"effect = "none""#,
            "async fn r#type() -> Result<(), E> {}",
        );
        assert_eq!(tool.name, "type");
        assert_eq!(tool.description, None);
    }

    #[test]
    fn a_function_name_mcp_refuses_needs_an_explicit_name() {
        let item = "async fn café() -> Result<(), E> {}";
        let failure = error(r#"effect = "none""#, item);
        assert!(failure.fallback.is_some());
        let errors = errors_of(item, failure.error);
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
        let failure = error(r#"effect = "reed""#, "fn search(a: A, b: B) {}");
        assert!(
            failure.fallback.is_none(),
            "a bad signature is emitted as is"
        );
        let messages: Vec<_> = failure.error.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(messages[0].starts_with("unknown effect `reed`"));
        assert!(messages[1].starts_with("a tool must be an `async fn`"));
    }

    #[test]
    fn argument_errors_still_expand_the_tool_with_defaults() {
        let failure = error(r#"effect = "reed", idempotent = "yes""#, SEARCH);
        assert_eq!(failure.error.into_iter().count(), 2);
        let fallback = failure.fallback.expect("the signature is fine");
        assert_eq!(fallback.name, "search");
        assert_eq!(fallback.args.idempotent, None);
        assert!(fallback.args.krate.is_none());

        let failure = error(r#"effect = "reed", crate = "::renamed""#, SEARCH);
        assert!(failure.fallback.unwrap().args.krate.is_some());
        // Without a trustworthy crate path the expansion would not resolve.
        assert!(error(r#"crate = "x y""#, SEARCH).fallback.is_none());
    }
}
