//! The checked function: the phases `#[tool]` and `#[resource]` share, and what a failure
//! still emits.
//!
//! Phases run in order and stop between them: the item must be a function; then the attribute's
//! arguments and the signature are each checked in full (they are independent, so their errors
//! are reported together); then the rules across them, only when both passed (rules about
//! arguments that were wrong would be noise). Code generation (`expand.rs`) only sees a
//! `Function` that passed every check, or the fallback of one whose signature is fine.

use proc_macro2::TokenStream;
use syn::ext::IdentExt;

use crate::{
    args::Common, description, errors::Errors, item::ItemFn, kind::Kind, name,
    signature::CheckedSignature,
};

/// An attribute's checked arguments: what differs between `#[tool]` and `#[resource]` up to
/// code generation.
pub(crate) trait Arguments: Sized {
    /// What the attribute makes of the function.
    const KIND: Kind;

    /// Parses and checks the tokens inside the attribute, reporting every bad key at once.
    fn parse(tokens: TokenStream) -> syn::Result<Self>;

    /// What to expand with when `parse` failed: every key at its default but `crate` (see
    /// [`Common::fallback`]), or `None` when even that is unknown.
    fn fallback(tokens: TokenStream) -> Option<Self>;

    /// The keys every attribute takes.
    fn common(&self) -> &Common;

    /// The rules across these arguments and the signature, beyond the name's.
    fn check_with(&self, signature: &CheckedSignature) -> syn::Result<()> {
        let _ = signature;
        Ok(())
    }
}

pub(crate) struct Function<A> {
    pub(crate) args: A,
    pub(crate) item: ItemFn,
    pub(crate) signature: CheckedSignature,
    /// `name = "..."`, or the function's name.
    pub(crate) name: String,
    /// `description = "..."`, or the doc comment.
    pub(crate) description: Option<String>,
}

/// Every error found, and what to emit alongside them.
pub(crate) struct Failure<A> {
    pub(crate) error: syn::Error,
    /// When only the attribute or a rule was wrong, the function with default arguments: it
    /// still expands, so `Carmy::new().tool(search)` and `search(input)` elsewhere raise nothing
    /// more. `None` when the signature itself is wrong: then the function is emitted unchanged.
    pub(crate) fallback: Option<Box<Function<A>>>,
}

impl<A: Arguments> Function<A> {
    pub(crate) fn new(args: TokenStream, item: TokenStream) -> Result<Self, Failure<A>> {
        let without_fallback = |error| Failure {
            error,
            fallback: None,
        };
        let item = ItemFn::parse(item, A::KIND).map_err(without_fallback)?;

        let mut errors = Errors::default();
        let checked_args = errors.ok(A::parse(args.clone()));
        let Some(signature) = errors.ok(CheckedSignature::check(&item.sig, A::KIND)) else {
            return Err(without_fallback(errors.finish().expect_err("recorded")));
        };
        let passed = checked_args.is_some();
        let Some(args) = checked_args.or_else(|| A::fallback(args)) else {
            return Err(without_fallback(errors.finish().expect_err("recorded")));
        };

        let common = args.common();
        let name = match &common.name {
            Some(name) => name.value(),
            None => item.sig.ident.unraw().to_string(),
        };
        let description = match &common.description {
            Some(description) => Some(description.value()),
            None => description::from_docs(&item.attrs),
        };
        let function = Function {
            args,
            item,
            signature,
            name,
            description,
        };
        if passed {
            errors.extend(function.check_default_name());
            errors.extend(function.args.check_with(&function.signature));
        }
        match errors.finish() {
            Ok(()) => Ok(function),
            Err(error) => Err(Failure {
                error,
                fallback: Some(Box::new(function)),
            }),
        }
    }

    /// A name taken from the function (`r#type` is `type`) must follow the rule too.
    fn check_default_name(&self) -> syn::Result<()> {
        if self.args.common().name.is_some() {
            return Ok(());
        }
        let kind = A::KIND;
        name::check(&self.name).map_err(|reason| {
            syn::Error::new(
                self.item.sig.ident.span(),
                format!(
                    "the function name `{}` is not a valid {} name: {reason}; set one with \
                     `#[{}(name = \"...\")]` ({})",
                    self.name,
                    kind.noun(),
                    kind.attribute(),
                    name::rule(kind)
                ),
            )
        })
    }
}
