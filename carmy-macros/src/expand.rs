//! Code generation for a checked `ToolDef`. Nothing here can fail.
//!
//! `async fn search(..)` becomes:
//! - `struct search;`, a unit struct in both namespaces, carrying the function's docs;
//! - `impl search { async fn call(..) }`, the function itself with its signature unchanged;
//! - in `const _: () = { .. };`: `Deref` to a function pointer (so `search(input).await` still
//!   works), the `Tool` impl, and trait checks spanned on the user's types.
//!
//! Every path is absolute (`::core::..`, `<crate>::__private::..`) and every local is
//! `__carmy_`-prefixed, so user code that shadows `Result`, `Box` or `Send` cannot break it.

use proc_macro2::{Group, Ident, Literal, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::{LitStr, Type, spanned::Spanned};

use crate::{
    signature::{Param, ToolSignature},
    tool::ToolDef,
};

pub(crate) fn tool(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    ToolDef::new(args, item).map(|tool| expand(&tool))
}

fn expand(tool: &ToolDef) -> TokenStream {
    let krate = match &tool.args.krate {
        Some(path) => quote!(#path),
        None => quote!(::carmy),
    };
    let private = quote!(#krate::__private);
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
    let checks = checks(&tool.signature, &private);

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
            #(#fn_attrs)*
            #vis #call_sig #body
        }

        #(#cfgs)*
        const _: () = {
            #deref
            #tool_impl
            #checks
        };
    }
}

/// `Deref` to `fn(..) -> BoxFuture<..>`: a call expression auto-derefs its callee, so
/// `search(input)` keeps working. A borrowed context makes the pointer higher-ranked.
fn deref(tool: &ToolDef, private: &TokenStream) -> TokenStream {
    let ident = &tool.item.sig.ident;
    let params = &tool.signature.params;
    let borrows_context = params
        .iter()
        .any(|param| matches!(param, Param::ContextRef(_)));
    let (binder, lifetime) = if borrows_context {
        (quote!(for<'__carmy_a>), quote!('__carmy_a))
    } else {
        (quote!(), quote!('static))
    };
    let types = params.iter().map(|param| match param {
        Param::Input(ty) | Param::ContextOwned(ty) | Param::State { ty, .. } => quote!(#ty),
        Param::ContextRef(ty) => quote!(&'__carmy_a #ty),
    });
    let names: Vec<_> = arg_names(params).collect();
    let syn::ReturnType::Type(_, return_type) = &tool.item.sig.output else {
        unreachable!("checked: a tool returns a `Result`")
    };

    quote! {
        impl ::core::ops::Deref for #ident {
            type Target = #binder fn(#(#types),*) -> #private::BoxFuture<#lifetime, #return_type>;

            fn deref(&self) -> &Self::Target {
                const __CARMY_CALL: <#ident as ::core::ops::Deref>::Target =
                    |#(#names),*| #private::box_future(#ident::call(#(#names),*));
                &__CARMY_CALL
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
        Param::State { .. } => format_ident!("__carmy_state{}", states.next().unwrap_or_default()),
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
                #(__carmy_requirements.state::<#states>();)*
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
        Param::ContextRef(_) => quote!(__carmy_invocation.context()),
        Param::ContextOwned(_) => quote!(__carmy_invocation.context_owned()),
        Param::State { ty, inner } => {
            quote_spanned!(ty.span()=> __carmy_invocation.state::<#inner>())
        }
    });
    // An error type without `Into<AgentError>` is reported on the user's `E`.
    let into_agent_error = at(
        signature.error_span.span(),
        quote!(#private::into_agent_error),
    );

    quote! {
        impl #private::Tool for #ident {
            type Input = #input_type;
            type Output = #output;
            const SPEC: #private::ToolSpec = #spec;

            #requirements

            fn run(
                &self,
                #input: Self::Input,
                #invocation: #private::Invocation,
            ) -> impl ::core::future::Future<
                Output = #private::Result<Self::Output, #private::AgentError>,
            > + ::core::marker::Send {
                async move {
                    #private::Result::map_err(
                        #ident::call(#(#args),*).await,
                        #into_agent_error,
                    )
                }
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

/// Trait checks on the input and output types, each spanned on the user's type so a missing
/// `Deserialize` or `JsonSchema` is reported there, with the trait's `on_unimplemented` advice.
fn checks(signature: &ToolSignature, private: &TokenStream) -> TokenStream {
    let input = signature
        .input()
        .map(|ty| check(ty, private, "assert_tool_input"));
    let output = check(&signature.output, private, "assert_tool_output");
    quote!(#input #output)
}

fn check(ty: &Type, private: &TokenStream, assertion: &str) -> TokenStream {
    let assertion = Ident::new(assertion, Span::call_site());
    let path = at(ty.span(), quote!(#private::#assertion));
    quote_spanned!(ty.span()=> #path::<#ty>();)
}

/// `tokens` with every span set to `span`: a type error in them lands on the user's code
/// rather than on the attribute.
fn at(span: Span, tokens: TokenStream) -> TokenStream {
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
        let tokens = tool(args.parse().unwrap(), item.parse().unwrap())
            .unwrap_or_else(|error| panic!("{error}"));
        syn::parse2(tokens).expect("the expansion is valid Rust")
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
        assert!(!text.contains("carmy ::"), "{text}");
        assert!(text.contains(":: renamed :: __private :: Tool"));
    }
}
