//! Code generation for a checked `#[tool]` or `#[resource]` function. Nothing here can fail.
//!
//! `async fn search(..)` becomes:
//! - `struct search;`, a unit struct in both namespaces, carrying the function's docs;
//! - `impl search { async fn call(..) }`, the function itself with its signature unchanged;
//! - in `const _: () = { .. };`: `Deref` to a function pointer returning a boxed future (so
//!   `search(input).await` still works), and the `Tool` impl, or the `Resource` impl.
//!
//! Tools and resources differ only in that last impl's trait, spec and method (`run`, `read`):
//! everything else, and every reason below, is the same for both.
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
//!   every missing trait a second time. Same for the output: a resource's `type Output = Page;`
//!   without `IntoContents` is `IntoContents`'s own message, on `Page` in the user's return type.
//! - Context and state: a parameter whose type is named `Context` is taken for the context, and
//!   `State<T>` for shared state, by name alone. `run` and `read` get them as
//!   `<Context as __private::ContextParam>::borrowed(..)` and
//!   `<State<Db> as __private::StateParam>::get(..)`, with the user's type tokens:
//!   only Carmy's types implement these traits, so a user's own `Context` is one error on that
//!   type, saying what was assumed, instead of mismatched types. `requirements` makes the same
//!   `<State<Db> as StateParam>` check; rustc prints the identical error once.
//! - The body: `run` and `read` await the same boxed future as the direct call, so the body's
//!   future is proven `Send` in exactly one place (`box_future`, spanned on the function's
//!   name). Awaiting `call` directly would report a non-`Send` body twice, for the price of one
//!   allocation per call.
//! - The error type: `into_agent_result(__carmy_result)` is located at the user's `E`, so a
//!   missing `Into<AgentError>` is reported there, once. Given the tool's call as its argument
//!   instead of a local, rustc would point at that call, that is at the attribute;
//!   `.map_err(into_agent_error)` would report it twice.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};
use syn::{LitStr, Path, spanned::Spanned};

use crate::{
    args::Common,
    completion,
    function::{Arguments, Function},
    item::ItemFn,
    prompt::PromptDef,
    rate_limit,
    resource::ResourceDef,
    signature::Param,
    tokens::{at, private},
    tool::ToolDef,
};

/// A tool: `impl Tool` with a `ToolSpec` and `run`.
pub(crate) fn tool(tool: &ToolDef) -> TokenStream {
    let private = private();
    let args = &tool.args;
    let name = name(tool);
    let effect = format_ident!("{}", args.effect.variant());
    let mut spec = quote!(#private::ToolSpec::new(#name, #private::Effect::#effect));
    if let Some(title) = &args.common.title {
        spec.extend(quote!(.title(#title)));
    }
    if let Some(description) = &tool.description {
        spec.extend(quote!(.description(#description)));
    }
    if let Some(idempotent) = args.idempotent {
        spec.extend(quote!(.idempotent(#idempotent)));
    }
    if let Some((transactional, _)) = args.transactional {
        spec.extend(quote!(.transactional(#transactional)));
    }
    if let Some(parallel_safe) = args.parallel_safe {
        spec.extend(quote!(.parallel_safe(#parallel_safe)));
    }
    if let Some(confirmation) = args.confirmation {
        let variant = format_ident!("{}", confirmation.variant());
        spec.extend(quote!(.confirmation(#private::Confirmation::#variant)));
    }
    spec.extend(timeout(&args.common));
    if let Some(task) = args.task {
        let variant = format_ident!("{}", task.variant());
        spec.extend(quote!(.task(#private::TaskSupport::#variant)));
    }
    if let Some(after) = args.task_after {
        let after = duration(after);
        spec.extend(quote!(.task_after(#after)));
    }
    if let Some(limit) = args.rate_limit {
        let limit = rate_limit::constructor(limit, &private);
        spec.extend(quote!(.rate_limit(#limit)));
    }
    function(
        tool,
        &Component {
            trait_name: "Tool",
            spec_type: "ToolSpec",
            method: "run",
            spec,
            items: None,
        },
    )
}

/// A resource: `impl Resource` with a `ResourceSpec` and `read`.
pub(crate) fn resource(resource: &ResourceDef) -> TokenStream {
    let private = private();
    let args = &resource.args;
    let name = name(resource);
    let uri = &args.uri;
    let mut spec = quote!(#private::ResourceSpec::new(#name, #uri));
    if let Some(title) = &args.common.title {
        spec.extend(quote!(.title(#title)));
    }
    if let Some(description) = &resource.description {
        spec.extend(quote!(.description(#description)));
    }
    if let Some(mime_type) = &args.mime_type {
        spec.extend(quote!(.mime_type(#mime_type)));
    }
    spec.extend(timeout(&args.common));
    function(
        resource,
        &Component {
            trait_name: "Resource",
            spec_type: "ResourceSpec",
            method: "read",
            spec,
            items: completion::items(args.complete.as_ref()),
        },
    )
}

/// A prompt: `impl Prompt` with a `PromptSpec`, `render`, and the completion it declares.
pub(crate) fn prompt(prompt: &PromptDef) -> TokenStream {
    let private = private();
    let args = &prompt.args;
    let name = name(prompt);
    let mut spec = quote!(#private::PromptSpec::new(#name));
    if let Some(title) = &args.common.title {
        spec.extend(quote!(.title(#title)));
    }
    if let Some(description) = &prompt.description {
        spec.extend(quote!(.description(#description)));
    }
    spec.extend(timeout(&args.common));
    function(
        prompt,
        &Component {
            trait_name: "Prompt",
            spec_type: "PromptSpec",
            method: "render",
            spec,
            items: completion::items(args.complete.as_ref()),
        },
    )
}

/// What the function becomes: `impl __carmy::<trait_name>`, with `const SPEC: <spec_type> =
/// <spec>`, `async fn <method>` and any other `items`.
struct Component {
    trait_name: &'static str,
    spec_type: &'static str,
    method: &'static str,
    spec: TokenStream,
    /// Completion (`COMPLETES`, `complete`), for what declares it.
    items: Option<TokenStream>,
}

/// The name in the spec: `name = "..."` as written, or the function's.
fn name<A: Arguments>(function: &Function<A>) -> LitStr {
    match &function.args.common().name {
        Some(name) => name.clone(),
        None => LitStr::new(&function.name, function.item.sig.ident.span()),
    }
}

/// `.timeout(..)` when the attribute set one.
fn timeout(common: &Common) -> Option<TokenStream> {
    let timeout = duration(common.timeout?);
    Some(quote!(.timeout(#timeout)))
}

/// `duration` as a `Duration` constructor, in milliseconds when it is a whole number of them.
fn duration(duration: std::time::Duration) -> TokenStream {
    if duration.subsec_nanos().is_multiple_of(1_000_000) {
        let millis = Literal::u128_unsuffixed(duration.as_millis());
        quote!(::core::time::Duration::from_millis(#millis))
    } else {
        let secs = Literal::u64_unsuffixed(duration.as_secs());
        let nanos = Literal::u32_unsuffixed(duration.subsec_nanos());
        quote!(::core::time::Duration::new(#secs, #nanos))
    }
}

/// The struct, `call`, and in the `const _` block the direct-call `Deref` and the component's
/// impl.
fn function<A: Arguments>(function: &Function<A>, component: &Component) -> TokenStream {
    let deref = deref(function);
    let component_impl = component_impl(function, component);
    unit_struct(
        &function.item,
        function.args.common().krate.as_ref(),
        quote!(#deref #component_impl),
    )
}

/// The unit struct of the function's name, the function as its associated `call`, and `items`
/// in a `const _` block where `__carmy` names `<krate>::__private` (`::carmy` by default).
pub(crate) fn unit_struct(item: &ItemFn, krate: Option<&Path>, items: TokenStream) -> TokenStream {
    let krate = match krate {
        Some(path) => quote!(#path),
        None => quote!(::carmy),
    };
    let ident = &item.sig.ident;
    let vis = &item.vis;
    let cfgs: Vec<_> = item.cfgs().collect();
    let docs: Vec<_> = item.docs().collect();
    let fn_attrs = item.fn_attrs();

    let mut call_sig = item.sig.clone();
    call_sig.ident = Ident::new("call", ident.span());
    let body = &item.body;

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
            // `async` is what the attribute asks for, awaited or not.
            #[allow(clippy::unused_async)]
            #(#fn_attrs)*
            #vis #call_sig #body
        }

        #(#cfgs)*
        const _: () = {
            use #krate::__private as __carmy;
            #items
        };
    }
}

/// `Deref` to `fn(..) -> BoxFuture<..>`: a call expression auto-derefs its callee, so
/// `search(input)` keeps working. The future borrows the context when the function does (`'_`
/// is the lifetime of `&Context`, the only reference it can take), else nothing.
fn deref<A>(function: &Function<A>) -> TokenStream {
    let private = private();
    let ident = &function.item.sig.ident;
    let params = &function.signature.params;
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
    let syn::ReturnType::Type(_, return_type) = &function.item.sig.output else {
        unreachable!("checked: the function returns a `Result`")
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

/// `impl Tool` or `impl Resource`: the input and output types as the user wrote them, the
/// spec, the states to require, and a method that calls the function with what the invocation
/// holds for each parameter.
fn component_impl<A>(function: &Function<A>, component: &Component) -> TokenStream {
    let private = private();
    let ident = &function.item.sig.ident;
    let signature = &function.signature;
    let trait_name = format_ident!("{}", component.trait_name);
    let spec_type = format_ident!("{}", component.spec_type);
    let method = format_ident!("{}", component.method);
    let spec = &component.spec;
    let items = &component.items;
    let input_type = match signature.input() {
        Some(ty) => quote!(#ty),
        None => quote!(#private::NoInput),
    };
    let output = &signature.output;

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
        impl #private::#trait_name for #ident {
            type Input = #input_type;
            type Output = #output;
            const SPEC: #private::#spec_type = #spec;

            #requirements

            async fn #method(
                &self,
                #input: Self::Input,
                #invocation: #private::Invocation,
            ) -> #private::Result<Self::Output, #private::AgentError> {
                let __carmy_result = (*#ident)(#(#args),*).await;
                #into_agent_result
            }

            #items
        }
    }
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

    #[test]
    fn resources_implement_the_resource_trait() {
        let resource = ResourceDef::new(
            r#"uri = "shop://products/{id}", mime_type = "application/json", crate = "::renamed""#
                .parse()
                .unwrap(),
            "async fn product(input: ProductRef, s: State<S>) -> Result<String, E> { todo!() }"
                .parse()
                .unwrap(),
        )
        .unwrap_or_else(|failure| panic!("{}", failure.error));
        let file: syn::File = syn::parse2(self::resource(&resource)).expect("valid Rust");
        assert_eq!(file.items.len(), 3);
        let text = quote!(#file).to_string();
        assert!(
            text.contains("impl __carmy :: Resource for product"),
            "{text}"
        );
        assert!(text.contains(
            r#"__carmy :: ResourceSpec :: new ("product" , "shop://products/{id}") . mime_type ("application/json")"#
        ), "{text}");
        assert!(text.contains("async fn read"), "{text}");
        assert!(!text.contains(":: carmy"), "{text}");
    }
}
