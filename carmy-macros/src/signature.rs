//! A checked view of the function's signature, the same for tools and resources: which
//! parameter is the input, which is the context, which are `State<T>`, and what the output is.
//!
//! Parameters are recognised by the last segment of their type, so `Context`,
//! `carmy::Context` and `crate::prelude::Context` are all the context. Everything that is not a
//! context or a `State<T>` is the input, of which there is at most one.
//!
//! A name is only a guess: a user's own `Context`, or axum's `State<T>`, looks the same. The
//! generated code reaches the context and state through traits that only Carmy's types
//! implement (`ContextParam`, `StateParam` in `carmy_core::__private`), so a wrong guess is one
//! compile error on the parameter's type, saying what was assumed (see `expand.rs`).

use quote::ToTokens;
use syn::{
    FnArg, GenericArgument, Pat, PathArguments, PathSegment, ReturnType, Signature, Type,
    TypeReference,
};

use crate::{
    errors::Errors,
    kind::Kind,
    types::{find_borrow, find_impl_trait, last_segment, ungroup},
};

/// The checked signature. The function's own tokens stay in `ItemFn`; this view says what
/// each piece is for.
pub(crate) struct CheckedSignature {
    /// The parameters in the user's order, which the generated calls keep.
    pub(crate) params: Vec<Param>,
    /// `T` in `Result<T, E>`.
    pub(crate) output: Type,
    /// `E` in `Result<T, E>`, or the whole return type for an alias like `io::Result<T>`: where
    /// an `Into<AgentError>` error should point.
    pub(crate) error_span: Type,
}

pub(crate) enum Param {
    /// The input: a tool's arguments, decoded from JSON, or the variables of a resource's URI.
    Input(Type),
    /// `&Context`: the type behind the reference, as written.
    ContextRef(Type),
    /// `Context` by value.
    ContextOwned(Type),
    /// `State<T>`, the whole type as written.
    State(Type),
}

impl CheckedSignature {
    pub(crate) fn input(&self) -> Option<&Type> {
        self.params.iter().find_map(|param| match param {
            Param::Input(ty) => Some(ty),
            _ => None,
        })
    }

    pub(crate) fn states(&self) -> impl Iterator<Item = &Type> {
        self.params.iter().filter_map(|param| match param {
            Param::State(ty) => Some(ty),
            _ => None,
        })
    }

    /// Checks `sig` for a `kind`, reporting every problem at once.
    pub(crate) fn check(sig: &Signature, kind: Kind) -> syn::Result<CheckedSignature> {
        let noun = kind.noun();
        let mut errors = Errors::default();
        check_qualifiers(sig, kind, &mut errors);
        check_generics(sig, kind, &mut errors);

        let mut params = Vec::new();
        let mut input_name = None;
        let mut has_context = false;
        for arg in &sig.inputs {
            let FnArg::Typed(arg) = arg else {
                errors.push(syn::Error::new_spanned(
                    arg,
                    format!(
                        "a {noun} cannot take `self`: `#[{}]` turns a free `async fn` into a \
                         {noun}; for a {noun} that carries its own configuration, implement `{}` \
                         by hand",
                        kind.attribute(),
                        kind.trait_path()
                    ),
                ));
                continue;
            };
            if let Some(impl_trait) = find_impl_trait(&arg.ty) {
                errors.push(syn::Error::new_spanned(
                    impl_trait,
                    format!("a {noun}'s parameters cannot be `impl Trait`; use a concrete type"),
                ));
                continue;
            }
            let Some(param) = errors.ok(classify(&arg.ty, kind)) else {
                continue;
            };
            match &param {
                Param::Input(_) => {
                    if let Some(first) = &input_name {
                        errors.push(syn::Error::new_spanned(
                            arg,
                            format!(
                                "a {noun} takes at most one input, and {first} is already the \
                                 input; put both in one struct that derives `Deserialize` and \
                                 `JsonSchema` (other parameters must be `&Context`, `Context` or \
                                 `State<T>`)"
                            ),
                        ));
                        continue;
                    }
                    input_name = Some(match &*arg.pat {
                        Pat::Ident(pat) => format!("`{}`", pat.ident),
                        _ => "an earlier parameter".to_owned(),
                    });
                }
                Param::ContextRef(_) | Param::ContextOwned(_) => {
                    if has_context {
                        errors.push(syn::Error::new_spanned(
                            arg,
                            format!("a {noun} takes at most one `Context`"),
                        ));
                        continue;
                    }
                    has_context = true;
                }
                Param::State(_) => {}
            }
            params.push(param);
        }

        let output = errors.ok(check_output(sig, kind));
        errors.finish()?;
        let (output, error_span) = output.expect("no errors means the output was checked");
        Ok(CheckedSignature {
            params,
            output,
            error_span,
        })
    }
}

/// `async` is required; `const`, `unsafe` and `extern` make no sense for a tool or a resource.
fn check_qualifiers(sig: &Signature, kind: Kind, errors: &mut Errors) {
    let noun = kind.noun();
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new_spanned(
            sig.fn_token,
            format!("a {noun} must be an `async fn`; add `async` before `fn`"),
        ));
    }
    if let Some(constness) = sig.constness {
        errors.push(syn::Error::new_spanned(
            constness,
            format!("a {noun} cannot be a `const fn`"),
        ));
    }
    if let Some(unsafety) = sig.unsafety {
        errors.push(syn::Error::new_spanned(
            unsafety,
            format!(
                "a {noun} cannot be `unsafe`: the runtime calls it with no way to uphold a \
                 safety contract"
            ),
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(syn::Error::new_spanned(
            abi,
            format!("a {noun} cannot have an `extern` ABI"),
        ));
    }
}

fn check_generics(sig: &Signature, kind: Kind, errors: &mut Errors) {
    let noun = kind.noun();
    let generics = &sig.generics;
    if !generics.params.is_empty() {
        let only_lifetimes = generics.lifetimes().count() == generics.params.len();
        let message = if only_lifetimes {
            format!(
                "a {noun} cannot have lifetime parameters: its input is owned and the context \
                 is borrowed as plain `&Context`; remove them"
            )
        } else {
            format!(
                "a {noun} cannot be generic: its input, output and `State<T>` types must be \
                 concrete so their schemas and state are known at `build()`; remove the generic \
                 parameters"
            )
        };
        errors.push(syn::Error::new_spanned(generics, message));
    }
    if let Some(where_clause) = &generics.where_clause {
        errors.push(syn::Error::new_spanned(
            where_clause,
            format!("a {noun} cannot have a `where` clause: its types must be concrete"),
        ));
    }
}

/// What a parameter is, from the last segment of its type.
fn classify(ty: &Type, kind: Kind) -> syn::Result<Param> {
    if let Type::Reference(reference) = ungroup(ty) {
        return classify_reference(reference, kind);
    }
    if let Some(segment) = last_segment(ty) {
        if segment.ident == "Context" && segment.arguments.is_none() {
            return Ok(Param::ContextOwned(ty.clone()));
        }
        if is_state(segment) {
            if let Some(borrow) = find_borrow(ty) {
                return Err(syn::Error::new_spanned(
                    borrow,
                    "`State<T>` holds a value registered once with `Carmy::state` and shared by \
                     every call: `T` cannot borrow (use `'static`, an owned type or an `Arc`)",
                ));
            }
            return Ok(Param::State(ty.clone()));
        }
    }
    if let Some(borrow) = find_borrow(ty) {
        return Err(not_owned(borrow, kind));
    }
    Ok(Param::Input(ty.clone()))
}

/// Only the context may be borrowed: the input is decoded afresh for each call and `State<T>`
/// is an `Arc`.
fn classify_reference(reference: &TypeReference, kind: Kind) -> syn::Result<Param> {
    let Some(segment) = last_segment(&reference.elem) else {
        return Err(not_owned(reference, kind));
    };
    if segment.ident == "Context" && segment.arguments.is_none() {
        if let Some(mutability) = reference.mutability {
            let and_token = reference.and_token;
            return Err(syn::Error::new_spanned(
                quote::quote!(#and_token #mutability),
                "take the context as `&Context` or `Context`, not `&mut Context`",
            ));
        }
        // A declared lifetime (`<'a>`) is already reported as generics.
        if let Some(lifetime) = &reference.lifetime
            && lifetime.ident == "static"
        {
            return Err(syn::Error::new_spanned(
                lifetime,
                "borrow the context as `&Context`, without a named lifetime",
            ));
        }
        return Ok(Param::ContextRef((*reference.elem).clone()));
    }
    if is_state(segment) {
        return Err(syn::Error::new_spanned(
            reference,
            "take `State<T>` by value, not by reference: it is a cheap `Arc` clone",
        ));
    }
    Err(not_owned(reference, kind))
}

fn not_owned(borrow: impl ToTokens, kind: Kind) -> syn::Error {
    syn::Error::new_spanned(
        borrow,
        format!(
            "a {}'s input must be an owned type: {} (only the context may be borrowed, as \
             `&Context`)",
            kind.noun(),
            kind.input_source()
        ),
    )
}

/// `State<T>`: named `State`, with one type argument.
fn is_state(segment: &PathSegment) -> bool {
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return false;
    };
    segment.ident == "State"
        && matches!(
            args.args.iter().collect::<Vec<_>>()[..],
            [GenericArgument::Type(_)]
        )
}

/// `Result<T, E>` or an alias `Result<T>`: returns `T` and what an error about `E` points at.
fn check_output(sig: &Signature, kind: Kind) -> syn::Result<(Type, Type)> {
    let noun = kind.noun();
    let ReturnType::Type(_, return_type) = &sig.output else {
        return Err(syn::Error::new_spanned(
            sig,
            format!(
                "a {noun} must return `Result<T, E>` with `E: Into<AgentError>`; add a return \
                 type, e.g. `-> {}`",
                kind.example_return()
            ),
        ));
    };
    if let Some(impl_trait) = find_impl_trait(return_type) {
        return Err(syn::Error::new_spanned(
            impl_trait,
            format!("a {noun} cannot return `impl Trait`: its output needs a concrete type"),
        ));
    }
    let not_result = || {
        syn::Error::new_spanned(
            return_type,
            format!(
                "a {noun} must return `Result<T, E>` with `E: Into<AgentError>`, where `T` is {}",
                kind.output_rule()
            ),
        )
    };
    let segment = last_segment(return_type).ok_or_else(not_result)?;
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return Err(not_result());
    };
    if segment.ident != "Result" {
        return Err(not_result());
    }
    match args.args.iter().collect::<Vec<_>>()[..] {
        [GenericArgument::Type(output)] => Ok((output.clone(), (**return_type).clone())),
        [GenericArgument::Type(output), GenericArgument::Type(error)] => {
            Ok((output.clone(), error.clone()))
        }
        _ => Err(not_result()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::errors_of;

    fn check(source: &str) -> syn::Result<CheckedSignature> {
        CheckedSignature::check(&syn::parse_str(source).unwrap(), Kind::Tool)
    }

    fn errors(source: &str) -> Vec<(String, String)> {
        errors_of(source, check(source).err().expect("expected an error"))
    }

    fn tokens(node: &impl ToTokens) -> String {
        node.to_token_stream().to_string()
    }

    /// The parameters as `kind:type` strings, to compare in one assertion.
    fn kinds(signature: &CheckedSignature) -> Vec<String> {
        signature
            .params
            .iter()
            .map(|param| match param {
                Param::Input(ty) => format!("input:{}", tokens(ty)),
                Param::ContextRef(ty) => format!("&context:{}", tokens(ty)),
                Param::ContextOwned(ty) => format!("context:{}", tokens(ty)),
                Param::State(ty) => format!("state:{}", tokens(ty)),
            })
            .collect()
    }

    #[test]
    fn parameters_are_recognised_in_any_order() {
        let signature = check(
            "async fn f(db: State<Db>, ctx: &carmy::Context, SearchInput { query, .. }: SearchInput, \
             cache: carmy::State<Arc<Cache>>) -> Result<SearchOutput, AgentError>",
        )
        .unwrap();
        assert_eq!(
            kinds(&signature),
            [
                "state:State < Db >",
                "&context:carmy :: Context",
                "input:SearchInput",
                "state:carmy :: State < Arc < Cache > >"
            ]
        );
        assert_eq!(tokens(signature.input().unwrap()), "SearchInput");
        assert_eq!(signature.states().count(), 2);
        assert_eq!(tokens(&signature.output), "SearchOutput");
        assert_eq!(tokens(&signature.error_span), "AgentError");
    }

    #[test]
    fn no_input_and_context_by_value() {
        let signature = check("async fn f(mut ctx: Context) -> Result<(), E>").unwrap();
        assert_eq!(kinds(&signature), ["context:Context"]);
        assert!(signature.input().is_none());
        assert_eq!(tokens(&signature.output), "()");
        assert!(
            check("async fn f() -> Result<(), E>")
                .unwrap()
                .params
                .is_empty()
        );
        assert!(check("async fn f(_: &'_ Context) -> Result<(), E>").is_ok());
    }

    #[test]
    fn types_that_only_look_similar_are_inputs() {
        let signature = check("async fn f(a: State, b: State<A, B>) -> Result<(), E>")
            .err()
            .unwrap();
        // Two "inputs": neither is a `State<T>`.
        assert!(
            signature
                .to_string()
                .starts_with("a tool takes at most one input")
        );
        let signature = check("async fn f(a: Context<T>) -> Result<(), E>").unwrap();
        assert_eq!(kinds(&signature), ["input:Context < T >"]);
    }

    #[test]
    fn static_borrows_are_owned() {
        let signature =
            check("async fn f(a: Cow<'static, str>, b: State<&'static str>) -> Result<(), E>")
                .unwrap();
        assert_eq!(
            kinds(&signature),
            [
                "input:Cow < 'static , str >",
                "state:State < & 'static str >"
            ]
        );
    }

    #[test]
    fn result_aliases_are_accepted() {
        let signature = check("async fn f() -> std::io::Result<Out>").unwrap();
        assert_eq!(tokens(&signature.output), "Out");
        assert_eq!(tokens(&signature.error_span), "std :: io :: Result < Out >");
    }

    #[test]
    fn signature_mistakes_point_at_the_offending_tokens() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, &str)] = &[
            ("fn f() -> Result<(), E>", "fn", "a tool must be an `async fn`"),
            ("async unsafe fn f() -> Result<(), E>", "unsafe", "a tool cannot be `unsafe`"),
            ("async fn f<T>(input: T) -> Result<(), E>", "<T>", "a tool cannot be generic"),
            ("async fn f<'a>(c: &'a Context) -> Result<(), E>", "<'a>", "a tool cannot have lifetime parameters"),
            ("async fn f() -> Result<(), E> where u8: Copy", "where u8: Copy", "a tool cannot have a `where` clause"),
            ("async fn f(&self) -> Result<(), E>", "&self", "a tool cannot take `self`"),
            ("async fn f(x: impl Into<u8>) -> Result<(), E>", "impl Into<u8>", "a tool's parameters cannot be `impl Trait`"),
            ("async fn f(x: Vec<impl Trait>) -> Result<(), E>", "impl Trait", "a tool's parameters cannot be `impl Trait`"),
            ("async fn f(a: A, b: B) -> Result<(), E>", "b: B", "a tool takes at most one input, and `a` is already the input"),
            ("async fn f(a: &Context, b: Context) -> Result<(), E>", "b: Context", "a tool takes at most one `Context`"),
            ("async fn f(a: &mut Context) -> Result<(), E>", "&mut", "take the context as `&Context` or `Context`"),
            ("async fn f(a: &'static Context) -> Result<(), E>", "'static", "borrow the context as `&Context`"),
            ("async fn f(a: &State<Db>) -> Result<(), E>", "&State<Db>", "take `State<T>` by value"),
            ("async fn f(a: &str) -> Result<(), E>", "&str", "a tool's input must be an owned type"),
            ("async fn f(a: Cow<'_, str>) -> Result<(), E>", "'_", "a tool's input must be an owned type"),
            ("async fn f(a: Vec<(u8, &str)>) -> Result<(), E>", "&str", "a tool's input must be an owned type"),
            ("async fn f(a: State<Pool<'a>>) -> Result<(), E>", "'a", "`State<T>` holds a value registered once"),
            ("async fn f(a: A)", "async fn f(a: A)", "a tool must return `Result<T, E>`"),
            ("async fn f(a: A) -> Option<u8>", "Option<u8>", "a tool must return `Result<T, E>`"),
            ("async fn f(a: A) -> Result", "Result", "a tool must return `Result<T, E>`"),
            ("async fn f(a: A) -> Result<impl Serialize, E>", "impl Serialize", "a tool cannot return `impl Trait`"),
        ];
        for (source, covered, message) in cases {
            let errors = errors(source);
            assert_eq!(errors.len(), 1, "{source}: {errors:?}");
            assert_eq!(errors[0].1, *covered, "{source}");
            assert!(
                errors[0].0.starts_with(message),
                "{source}: {}",
                errors[0].0
            );
        }
    }

    #[test]
    fn every_signature_mistake_is_reported() {
        let errors = errors("fn f<T>(&self, a: A, b: B)");
        let covered: Vec<_> = errors.iter().map(|(_, text)| text.as_str()).collect();
        assert_eq!(
            covered,
            ["fn", "<T>", "&self", "b: B", "fn f<T>(&self, a: A, b: B)"]
        );
    }
}
