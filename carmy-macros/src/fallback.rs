//! What the macro emits when a check fails: the errors, plus what keeps the function's name
//! usable (see [`Fallback`]): the function expanded with default arguments when only the
//! attribute or a rule was wrong, a stand-in when the signature was, or else the user's item
//! unchanged.
//!
//! Either way the name the user wrote still exists, so one mistake in a `#[tool]`, `#[resource]`
//! or `#[prompt]` gives the errors about that mistake and not a cascade of "cannot find
//! `search`" or "`search` is not a Carmy tool" at every use, and IDEs keep completing inside the
//! body.
//!
//! A stand-in, like thiserror's fallback impls, is what the expansion would have been with
//! nothing taken from the signature: the unit struct, the function as its `call` (so its body is
//! still checked, and `search::call` still resolves), an impl of the component's trait with
//! placeholder types, and a direct-call `Deref` with the parameters as written. Their bodies are
//! `unreachable!()`: the crate has already failed to compile, so none of them ever runs, and
//! none can raise an error of its own.

use proc_macro2::{TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::{FnArg, LitStr, ReturnType, Signature, Type};

use crate::{
    expand,
    function::{Arguments, Failure, Fallback, Function, StandIn},
    kind::Kind,
};

/// `expand` is the attribute's code generation, given the fallback when there is one.
pub(crate) fn expansion<A: Arguments>(
    item: TokenStream,
    failure: Failure<A>,
    expand: fn(&Function<A>) -> TokenStream,
) -> TokenStream {
    let mut tokens = match &failure.fallback {
        Fallback::Expanded(function) => expand(function),
        Fallback::StandIn(stand_in) => self::stand_in(stand_in),
        Fallback::Item => item,
    };
    tokens.extend(failure.error.into_compile_error());
    tokens
}

/// The stand-in for a function whose signature is wrong.
pub(crate) fn stand_in(stand_in: &StandIn) -> TokenStream {
    let ident = &stand_in.item.sig.ident;
    let name = LitStr::new(&stand_in.name, ident.span());
    let never = never();
    // What `Carmy::tool`, `::resource` or `::prompt` requires, and no more.
    let component = match stand_in.kind {
        Kind::Tool => quote! {
            impl __carmy::Tool for #ident {
                type Input = __carmy::NoInput;
                type Output = ();
                const SPEC: __carmy::ToolSpec =
                    __carmy::ToolSpec::new(#name, __carmy::Effect::None);

                async fn run(
                    &self,
                    _: Self::Input,
                    _: __carmy::Invocation,
                ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
                    #never
                }
            }
        },
        Kind::Resource => quote! {
            impl __carmy::Resource for #ident {
                type Input = __carmy::NoInput;
                type Output = ::std::string::String;
                const SPEC: __carmy::ResourceSpec = __carmy::ResourceSpec::new(#name, "");

                async fn read(
                    &self,
                    _: Self::Input,
                    _: __carmy::Invocation,
                ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
                    #never
                }
            }
        },
        Kind::Prompt => quote! {
            impl __carmy::Prompt for #ident {
                type Input = __carmy::NoInput;
                type Output = ::std::string::String;
                const SPEC: __carmy::PromptSpec = __carmy::PromptSpec::new(#name);

                async fn render(
                    &self,
                    _: Self::Input,
                    _: __carmy::Invocation,
                ) -> __carmy::Result<Self::Output, __carmy::AgentError> {
                    #never
                }
            }
        },
    };
    let deref = direct_call(&stand_in.item.sig);
    expand::unit_struct(
        &stand_in.item,
        stand_in.krate.as_ref(),
        quote!(#deref #component),
    )
}

/// The body of every stand-in method.
fn never() -> TokenStream {
    quote!(::core::unreachable!(
        "a stand-in for a function whose expansion failed"
    ))
}

/// `Deref` to `fn(<the parameters as written>) -> BoxFuture<'static, <the return type>>`: the
/// function as it will be once its signature is fixed, so `search(input).await` elsewhere
/// type-checks. `None` where such a pointer cannot be named without an error of its own: a
/// generic function, an `impl Trait`, a lifetime the pointer cannot declare, an output that
/// borrows.
fn direct_call(sig: &Signature) -> Option<TokenStream> {
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return None;
    }
    let types = sig
        .inputs
        .iter()
        .map(|arg| match arg {
            FnArg::Typed(arg) => Some(&*arg.ty),
            FnArg::Receiver(_) => None,
        })
        .collect::<Option<Vec<&Type>>>()?;
    let output = match &sig.output {
        ReturnType::Type(_, ty) => ty.to_token_stream(),
        ReturnType::Default => quote!(()),
    };
    let parameters_fit = types
        .iter()
        .all(|ty| nameable(ty.to_token_stream(), Borrows::Elided));
    if !parameters_fit || !nameable(output.clone(), Borrows::None) {
        return None;
    }
    let ident = &sig.ident;
    let ignored = types.iter().map(|_| quote!(_));
    let never = never();
    Some(quote! {
        impl ::core::ops::Deref for #ident {
            type Target = fn(#(#types),*) -> __carmy::BoxFuture<'static, #output>;

            fn deref(&self) -> &Self::Target {
                &((|#(#ignored),*| #never) as Self::Target)
            }
        }
    })
}

/// Which borrows a type may hold to appear in the pointer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Borrows {
    /// `&T` and `'_`, which the pointer's parameters take for any lifetime (and `'static`).
    Elided,
    /// Only `'static`: the output of a future that borrows nothing.
    None,
}

/// Whether `tokens` hold no `impl` and no borrow beyond what `borrows` allows. Read on tokens,
/// as `impl` and lifetimes may sit anywhere in a type.
fn nameable(tokens: TokenStream, borrows: Borrows) -> bool {
    let mut lifetime = false;
    tokens.into_iter().all(|token| {
        let fits = match &token {
            TokenTree::Ident(ident) if lifetime => {
                ident == "static" || (borrows == Borrows::Elided && ident == "_")
            }
            TokenTree::Ident(ident) => ident != "impl",
            TokenTree::Punct(punct) if punct.as_char() == '&' => borrows == Borrows::Elided,
            TokenTree::Group(group) => nameable(group.stream(), borrows),
            TokenTree::Punct(_) | TokenTree::Literal(_) => true,
        };
        lifetime = matches!(&token, TokenTree::Punct(punct) if punct.as_char() == '\'');
        fits
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{prompt::PromptDef, resource::ResourceDef, tool::ToolDef};

    /// The stand-in of `item` under `#[tool(args)]`, parsed back.
    fn stand_in_of(args: &str, item: &str) -> syn::File {
        let failure = ToolDef::new(args.parse().unwrap(), item.parse().unwrap())
            .err()
            .expect("the signature is wrong");
        let stand_in = failure.fallback.stand_in().expect("a stand-in");
        syn::parse2(self::stand_in(&stand_in)).expect("the stand-in is valid Rust")
    }

    fn text(file: &syn::File) -> String {
        quote!(#file).to_string()
    }

    #[test]
    fn a_wrong_signature_still_gives_the_struct_call_and_trait() {
        let file = stand_in_of(
            r#"effect = "read""#,
            "/// Docs.\npub fn search(query: String, limit: u32) -> Result<String, E> { todo!() }",
        );
        // The struct, the inherent impl with `call`, the const block.
        assert_eq!(file.items.len(), 3);
        let text = text(&file);
        assert!(text.contains("pub struct search ;"), "{text}");
        assert!(
            text.contains("pub fn call (query : String , limit : u32)"),
            "{text}"
        );
        assert!(text.contains("impl __carmy :: Tool for search"), "{text}");
        assert!(
            text.contains(
                "type Target = fn (String , u32) -> __carmy :: BoxFuture < 'static , Result < String , E > >"
            ),
            "{text}"
        );
        assert!(text.contains("use :: carmy :: __private as __carmy"));
    }

    #[test]
    fn the_stand_in_follows_the_crate_path_even_with_other_keys_wrong() {
        let text = text(&stand_in_of(
            r#"effect = "reed", crate = "::renamed""#,
            "fn search() -> Result<(), E> {}",
        ));
        assert!(
            text.contains("use :: renamed :: __private as __carmy"),
            "{text}"
        );
        assert!(!text.contains(":: carmy"), "{text}");
    }

    #[test]
    fn no_stand_in_without_a_crate_path_or_outside_a_free_function() {
        let fallback = |args: &str, item: &str| {
            ToolDef::new(args.parse().unwrap(), item.parse().unwrap())
                .err()
                .unwrap()
                .fallback
        };
        let wrong = "fn search() -> Result<(), E> {}";
        assert!(matches!(
            fallback(r#"crate = "x y""#, wrong),
            Fallback::Item
        ));
        assert!(matches!(
            fallback(r#"effect: "read""#, wrong),
            Fallback::Item
        ));
        assert!(matches!(
            fallback(
                r#"effect = "read""#,
                "async fn search(&self) -> Result<(), E> {}"
            ),
            Fallback::Item
        ));
    }

    #[test]
    fn no_direct_call_where_its_pointer_cannot_be_named() {
        for item in [
            "async fn f<T>(input: T) -> Result<(), E> {}",
            "async fn f<'a>(ctx: &'a Context) -> Result<(), E> {}",
            "async fn f(input: impl Into<String>) -> Result<(), E> {}",
            "async fn f(a: State<Pool<'a>>) -> Result<(), E> {}",
            "async fn f(a: &str) -> Result<&str, E> {}",
            "async fn f() -> Result<impl Serialize, E> {}",
        ] {
            let text = text(&stand_in_of(r#"effect = "read""#, item));
            assert!(!text.contains("Deref"), "{item}: {text}");
            assert!(text.contains("impl __carmy :: Tool for f"), "{item}");
        }
        for item in [
            "async fn f(a: &str, ctx: &mut Context, b: Cow<'_, str>) -> Result<(), E> {}",
            "async fn f(a: State<Cfg<'static>>, b: B) {}",
            "fn f(a: &State<Db>) -> Option<String> {}",
        ] {
            let text = text(&stand_in_of(r#"effect = "read""#, item));
            assert!(text.contains("Deref"), "{item}: {text}");
        }
    }

    #[test]
    fn resources_and_prompts_get_theirs() {
        let failure = ResourceDef::new(
            r#"uri = "shop://policies/returns""#.parse().unwrap(),
            "fn returns() -> Result<String, E> {}".parse().unwrap(),
        )
        .err()
        .unwrap();
        let stand_in = failure.fallback.stand_in().unwrap();
        let text = self::stand_in(&stand_in).to_string();
        assert!(
            text.contains("impl __carmy :: Resource for returns"),
            "{text}"
        );
        assert!(text.contains("async fn read"), "{text}");

        let failure = PromptDef::new(
            TokenStream::new(),
            "async fn greet(name: &str) -> Result<String, E> {}"
                .parse()
                .unwrap(),
        )
        .err()
        .unwrap();
        let stand_in = failure.fallback.stand_in().unwrap();
        let text = self::stand_in(&stand_in).to_string();
        assert!(text.contains("impl __carmy :: Prompt for greet"), "{text}");
        assert!(text.contains("async fn render"), "{text}");
    }
}
