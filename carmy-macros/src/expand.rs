//! Code generation for a checked `ToolDef`. Nothing here can fail.
//!
//! `async fn search(..)` becomes:
//! - `struct search;`, a unit struct in both namespaces, carrying the function's docs;
//! - `impl search { async fn call(..) }`, the function itself with its signature unchanged;
//! - in `const _: () = { .. };`: `Deref` to a function pointer returning a boxed future (so
//!   `search(input).await` still works), and the `Tool` impl.
//!
//! `tests/expand/*.expanded.rs` show it in full, formatted; the expansion is meant to be read.
//!
//! Every path is absolute (`::core::..`, or `__carmy::..` after `use <crate>::__private as
//! __carmy;` in the `const _` block) and every local is `__carmy_`-prefixed, so user code that
//! shadows `Result`, `Box` or `Send` cannot break it.
//!
//! Each mistake the macro cannot see is one compiler error on the user's tokens; that shapes the
//! generated code:
//! - Input and output: `type Input = SearchInput;` keeps the user's tokens, so a type without
//!   `Deserialize` or `JsonSchema` is reported on the user's parameter by the `Tool::Input`
//!   bound itself (one error per missing trait). An extra `assert_tool_input::<T>()` would report
//!   every missing trait a second time. Same for the output.
//! - Context and state: a parameter whose type is named `Context` is taken for the context, and
//!   `State<T>` for shared state, by name alone. `run` gets them as
//!   `<Context as __private::ContextParam>::borrowed(..)` and
//!   `<State<Db> as __private::StateParam>::get(..)`, with the user's type tokens:
//!   only Carmy's types implement these traits, so a user's own `Context` is one error on that
//!   type, saying what was assumed, instead of mismatched types. `requirements` makes the same
//!   `<State<Db> as StateParam>` check; rustc prints the identical error once.
//! - The body: `run` awaits the same boxed future as the direct call, so the body's future is
//!   proven `Send` in exactly one place (`box_future`, spanned on the function's name). Awaiting
//!   `call` directly would report a non-`Send` body twice, for the price of one allocation per
//!   call.
//! - The error type: `into_agent_result(__carmy_result)` is located at the user's `E`, so a
//!   missing `Into<AgentError>` is reported there, once. Given the tool's call as its argument
//!   instead of a local, rustc would point at that call, that is at the attribute;
//!   `.map_err(into_agent_error)` would report it twice.

use proc_macro2::{Group, Ident, Literal, Span, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::{LitStr, spanned::Spanned};

use crate::{signature::Param, tool::ToolDef};

pub(crate) fn tool(tool: &ToolDef) -> TokenStream {
    let krate = match &tool.args.krate {
        Some(path) => quote!(#path),
        None => quote!(::carmy),
    };
    // Inside the `const _` block, `__carmy` names the runtime's `__private` module: the paths
    // stay absolute and the expansion stays short.
    let private = quote!(__carmy);
    let ident = &tool.item.sig.ident;
    let vis = &tool.item.vis;
    let cfgs: Vec<_> = tool.cfgs().collect();
    let docs: Vec<_> = tool.docs().collect();
    let fn_attrs = tool.fn_attrs();

    let mut call_sig = tool.item.sig.clone();
    call_sig.ident = Ident::new("call", ident.span());
    let body = &tool.item.body;

    let deref = deref(tool, &private);
    let tool_impl = tool_impl(tool, &private);

    quote! {
        #(#cfgs)*
        #(#docs)*
        #[allow(non_camel_case_types)]
        #[derive(
            ::core::clone::Clone,
            ::core::marker::Copy,
            ::core::fmt::Debug,
            ::core::default::Default,
        )]
        #vis struct #ident;

        #(#cfgs)*
        impl #ident {
            #(#docs)*
            // `async` is what `#[tool]` asks for, awaited or not.
            #[allow(clippy::unused_async)]
            #(#fn_attrs)*
            #vis #call_sig #body
        }

        #(#cfgs)*
        const _: () = {
            use #krate::__private as __carmy;
            #deref
            #tool_impl
        };
    }
}

/// `Deref` to `fn(..) -> BoxFuture<..>`: a call expression auto-derefs its callee, so
/// `search(input)` keeps working. The future borrows the context when the tool does (`'_` is the
/// lifetime of `&Context`, the only reference a tool can take), else nothing.
fn deref(tool: &ToolDef, private: &TokenStream) -> TokenStream {
    let ident = &tool.item.sig.ident;
    let params = &tool.signature.params;
    let borrows_context = params
        .iter()
        .any(|param| matches!(param, Param::ContextRef(_)));
    let lifetime = if borrows_context {
        quote!('_)
    } else {
        quote!('static)
    };
    let types = params.iter().map(|param| match param {
        Param::Input(ty) | Param::ContextOwned(ty) | Param::State(ty) => quote!(#ty),
        Param::ContextRef(ty) => quote!(&#ty),
    });
    let names: Vec<_> = arg_names(params).collect();
    let syn::ReturnType::Type(_, return_type) = &tool.item.sig.output else {
        unreachable!("checked: a tool returns a `Result`")
    };

    // A body that holds something non-`Send` across an `.await` is reported on the name.
    let boxed_call = at(
        ident.span(),
        quote!(#private::box_future(#ident::call(#(#names),*))),
    );

    // `&(closure as fn(..))` is promoted to a `'static` constant.
    quote! {
        impl ::core::ops::Deref for #ident {
            type Target = fn(#(#types),*) -> #private::BoxFuture<#lifetime, #return_type>;

            fn deref(&self) -> &Self::Target {
                &((|#(#names),*| #boxed_call) as Self::Target)
            }
        }
    }
}

/// The direct-call shim's parameter names, by role.
fn arg_names(params: &[Param]) -> impl Iterator<Item = Ident> + '_ {
    let mut states = 0_usize..;
    params.iter().map(move |param| match param {
        Param::Input(_) => format_ident!("__carmy_input"),
        Param::ContextRef(_) | Param::ContextOwned(_) => format_ident!("__carmy_context"),
        Param::State(_) => format_ident!("__carmy_state{}", states.next().unwrap_or_default()),
    })
}

fn tool_impl(tool: &ToolDef, private: &TokenStream) -> TokenStream {
    let ident = &tool.item.sig.ident;
    let signature = &tool.signature;
    let input_type = match signature.input() {
        Some(ty) => quote!(#ty),
        None => quote!(#private::NoInput),
    };
    let output = &signature.output;
    let spec = spec(tool, private);

    let states: Vec<_> = signature.states().collect();
    let requirements = (!states.is_empty()).then(|| {
        quote! {
            fn requirements(__carmy_requirements: &mut #private::Requirements) {
                #(<#states as #private::StateParam>::require(__carmy_requirements);)*
            }
        }
    });

    let input = match signature.input() {
        Some(_) => quote!(__carmy_input),
        None => quote!(_),
    };
    let uses_invocation = signature
        .params
        .iter()
        .any(|param| !matches!(param, Param::Input(_)));
    let invocation = if uses_invocation {
        quote!(__carmy_invocation)
    } else {
        quote!(_)
    };
    let args = signature.params.iter().map(|param| match param {
        Param::Input(_) => quote!(__carmy_input),
        Param::ContextRef(ty) => {
            quote!(<#ty as #private::ContextParam>::borrowed(&__carmy_invocation))
        }
        Param::ContextOwned(ty) => {
            quote!(<#ty as #private::ContextParam>::owned(&__carmy_invocation))
        }
        Param::State(ty) => {
            quote!(<#ty as #private::StateParam>::get(&__carmy_invocation))
        }
    });
    // An error type without `Into<AgentError>` is reported on the user's `E`.
    let into_agent_result = at(
        signature.error_span.span(),
        quote!(#private::into_agent_result(__carmy_result)),
    );

    quote! {
        impl #private::Tool for #ident {
            type Input = #input_type;
            type Output = #output;
            const SPEC: #private::ToolSpec = #spec;

            #requirements

            async fn run(
                &self,
                #input: Self::Input,
                #invocation: #private::Invocation,
            ) -> #private::Result<Self::Output, #private::AgentError> {
                let __carmy_result = (*#ident)(#(#args),*).await;
                #into_agent_result
            }
        }
    }
}

/// The `ToolSpec` const: name and effect, then only the keys the user set.
fn spec(tool: &ToolDef, private: &TokenStream) -> TokenStream {
    let args = &tool.args;
    let name = match &args.name {
        Some(name) => name.clone(),
        None => LitStr::new(&tool.name, tool.item.sig.ident.span()),
    };
    let effect = format_ident!("{}", args.effect.variant());
    let mut spec = quote!(#private::ToolSpec::new(#name, #private::Effect::#effect));
    if let Some(title) = &args.title {
        spec.extend(quote!(.title(#title)));
    }
    if let Some(description) = &tool.description {
        spec.extend(quote!(.description(#description)));
    }
    if let Some(idempotent) = args.idempotent {
        spec.extend(quote!(.idempotent(#idempotent)));
    }
    if let Some(parallel_safe) = args.parallel_safe {
        spec.extend(quote!(.parallel_safe(#parallel_safe)));
    }
    if let Some(confirmation) = args.confirmation {
        let variant = format_ident!("{}", confirmation.variant());
        spec.extend(quote!(.confirmation(#private::Confirmation::#variant)));
    }
    if let Some(timeout) = args.timeout {
        let duration = if timeout.subsec_nanos() % 1_000_000 == 0 {
            let millis = Literal::u128_unsuffixed(timeout.as_millis());
            quote!(::core::time::Duration::from_millis(#millis))
        } else {
            let secs = Literal::u64_unsuffixed(timeout.as_secs());
            let nanos = Literal::u32_unsuffixed(timeout.subsec_nanos());
            quote!(::core::time::Duration::new(#secs, #nanos))
        };
        spec.extend(quote!(.timeout(#duration)));
    }
    spec
}

/// `tokens`, reported at `span`: a type error in them lands on the user's code rather than on
/// the attribute. Only the location changes; names still resolve at the call site, so the
/// `__carmy_` locals keep working when the tool is written inside a `macro_rules!`. Apart from
/// the tool's name (items are not hygienic), never pass the user's tokens through this: their
/// hygiene (`$crate`, locals) must stay theirs.
fn at(span: Span, tokens: TokenStream) -> TokenStream {
    let span = Span::call_site().located_at(span);
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) => {
                let mut respanned = Group::new(group.delimiter(), at(span, group.stream()));
                respanned.set_span(span);
                TokenTree::Group(respanned)
            }
            mut token => {
                token.set_span(span);
                token
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(args: &str, item: &str) -> syn::File {
        let tool = ToolDef::new(args.parse().unwrap(), item.parse().unwrap())
            .unwrap_or_else(|failure| panic!("{}", failure.error));
        syn::parse2(self::tool(&tool)).expect("the expansion is valid Rust")
    }

    #[test]
    fn expansions_are_valid_rust() {
        let file = expand_str(
            r#"effect = "write", idempotent, parallel_safe = false, confirmation = "none",
               title = "Search", timeout = "1.5s""#,
            "/// Docs.\n#[cfg(all())]\npub async fn search(db: State<Db>, ctx: &Context, \
             SearchInput { query, .. }: SearchInput) -> Result<SearchOutput, AgentError> { todo!() }",
        );
        // The struct, the inherent impl with `call`, the const block.
        assert_eq!(file.items.len(), 3);
        let syn::Item::Struct(item) = &file.items[0] else {
            panic!("expected the struct first");
        };
        assert_eq!(item.ident, "search");
        assert!(matches!(item.vis, syn::Visibility::Public(_)));
    }

    #[test]
    fn a_custom_crate_path_replaces_carmy_everywhere() {
        let file = expand_str(
            r#"effect = "read", crate = "::renamed""#,
            "async fn f(x: X, c: Context, s: State<S>) -> Result<(), E> { todo!() }",
        );
        let text = quote!(#file).to_string();
        assert!(!text.contains(":: carmy"), "{text}");
        assert!(text.contains("use :: renamed :: __private as __carmy"));
    }
}
