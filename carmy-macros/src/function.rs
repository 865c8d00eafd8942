//! The checked function: the phases `#[tool]` and `#[resource]` share, and what a failure
//! still emits.
//!
//! Phases run in order and stop between them: the item must be a function; then the attribute's
//! arguments and the signature are each checked in full (they are independent, so their errors
//! are reported together); then the rules across them, only when both passed (rules about
//! arguments that were wrong would be noise). Code generation (`expand.rs`) only sees a
//! `Function` that passed every check, the fallback of one whose signature is fine, or the
//! stand-in for one whose signature is not.

use proc_macro2::TokenStream;
use syn::{Path, ext::IdentExt};

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
    pub(crate) fallback: Fallback<A>,
}

/// What a failed expansion emits beside its errors, so that the name the user wrote is still
/// what `Carmy::new().tool(search)` takes, and one mistake gives one error rather than a second
/// one at every use of the function.
pub(crate) enum Fallback<A> {
    /// Only the attribute or a rule was wrong: the function with default arguments, expanded
    /// as usual.
    Expanded(Box<Function<A>>),
    /// The signature was wrong: nothing can be generated from it, so an impl whose methods
    /// never run stands in for the generated one.
    StandIn(Box<StandIn>),
    /// Nothing to stand on: not a function, a method (`self`), or no known path to the `carmy`
    /// crate. The item as written.
    Item,
}

/// A function whose signature is wrong, and what its stand-in needs.
pub(crate) struct StandIn {
    pub(crate) kind: Kind,
    pub(crate) item: ItemFn,
    /// `crate = "..."`, when the attribute said so.
    pub(crate) krate: Option<Path>,
    /// The function's name, as a name for the stand-in's spec.
    pub(crate) name: String,
}

impl<A: Arguments> Function<A> {
    pub(crate) fn new(args: TokenStream, item: TokenStream) -> Result<Self, Failure<A>> {
        let item = ItemFn::parse(item, A::KIND).map_err(|error| Failure {
            error,
            fallback: Fallback::Item,
        })?;

        let mut errors = Errors::default();
        let checked_args = errors.ok(A::parse(args.clone()));
        let Some(signature) = errors.ok(CheckedSignature::check(&item.sig, A::KIND)) else {
            let args = checked_args.or_else(|| A::fallback(args));
            return Err(Failure {
                error: errors.finish().expect_err("recorded"),
                fallback: Fallback::for_wrong_signature(item, args.as_ref()),
            });
        };
        let passed = checked_args.is_some();
        let Some(args) = checked_args.or_else(|| A::fallback(args)) else {
            return Err(Failure {
                error: errors.finish().expect_err("recorded"),
                fallback: Fallback::Item,
            });
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
                fallback: Fallback::Expanded(Box::new(function)),
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

impl<A: Arguments> Fallback<A> {
    /// The fallback of `item`, whose signature is wrong, given what is known of the attribute's
    /// arguments (`None` when not even the `crate` path is).
    fn for_wrong_signature(item: ItemFn, args: Option<&A>) -> Fallback<A> {
        // A method is in an `impl` block, where no struct can be declared; and without a path
        // to the crate, a stand-in would not resolve.
        let Some(args) = args.filter(|_| item.sig.receiver().is_none()) else {
            return Fallback::Item;
        };
        Fallback::StandIn(Box::new(StandIn {
            kind: A::KIND,
            krate: args.common().krate.clone(),
            name: item.sig.ident.unraw().to_string(),
            item,
        }))
    }
}

#[cfg(test)]
impl<A> Fallback<A> {
    /// The function expanded with default arguments, if that is the fallback.
    pub(crate) fn expanded(self) -> Option<Box<Function<A>>> {
        match self {
            Fallback::Expanded(function) => Some(function),
            Fallback::StandIn(_) | Fallback::Item => None,
        }
    }

    /// The stand-in, if that is the fallback.
    pub(crate) fn stand_in(self) -> Option<Box<StandIn>> {
        match self {
            Fallback::StandIn(stand_in) => Some(stand_in),
            Fallback::Expanded(_) | Fallback::Item => None,
        }
    }
}
