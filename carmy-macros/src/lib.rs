//! The `#[tool]` attribute of [Carmy](https://docs.rs/carmy). Use it through the `carmy` crate
//! (`carmy::tool` or `carmy::prelude::*`); this crate's paths are not part of the API.

mod args;
mod description;
mod errors;
mod expand;
mod fallback;
mod item;
mod name;
mod signature;
#[cfg(test)]
mod snapshots;
#[cfg(test)]
mod test_util;
mod timeout;
mod tool;
mod types;

use proc_macro::TokenStream;

/// Turns an `async fn` into a Carmy tool with a declared side effect.
///
/// ```
/// use carmy::prelude::*;
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct SearchInput {
///     query: String,
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct SearchOutput {
///     skus: Vec<String>,
/// }
///
/// /// Search the product catalog.
/// #[tool(effect = "read", idempotent)]
/// async fn search(input: SearchInput) -> Result<SearchOutput, AgentError> {
///     Ok(SearchOutput { skus: vec![input.query] })
/// }
///
/// let runtime = Carmy::new().tool(search).build().unwrap();
/// # let _ = runtime;
/// ```
///
/// # Attribute keys
///
/// | key | value | default |
/// |---|---|---|
/// | `effect` | **required**: `"none"`, `"read"`, `"write"`, `"destructive"` or `"external_write"` | |
/// | `idempotent` | flag, or `= true` / `= false` | `false` |
/// | `parallel_safe` | `= true` / `= false` | `true` for `none` and `read`, else `false` |
/// | `confirmation` | `"required"` or `"none"` | `"required"` for `destructive`, else `"none"` |
/// | `name` | 1–128 characters of `A-Z a-z 0-9 _ - .` | the function's name |
/// | `title` | a display name | none |
/// | `description` | what the tool does, for the model | the doc comment |
/// | `timeout` | a duration: `"500ms"`, `"30s"`, `"2m"`, `"1h 30m"` | the runtime's default |
/// | `crate` | the path to the `carmy` crate, e.g. `"::my_carmy"` | `::carmy` |
///
/// Mistakes are compile errors that point at the offending tokens, all reported at once.
///
/// # Parameters
///
/// In any order:
/// - at most one **input**: any type implementing `serde::Deserialize` and
///   `schemars::JsonSchema`, decoded from the call's JSON arguments, so an owned type (`String`,
///   not `&str` or `Cow<'_, str>`). Its parameter may be any
///   pattern (`mut input`, `SearchInput { query, .. }`). Without one the tool takes
///   [`NoInput`](https://docs.rs/carmy/latest/carmy/struct.NoInput.html), the empty object.
/// - at most one trusted **context**, `&Context` or `Context`: who is calling, what the host
///   granted, cancellation and progress.
/// - any number of **`State<T>`**: shared values registered with `Carmy::state`, checked at
///   `build()`; `T` is `Send + Sync` and borrows nothing.
///
/// Parameters are recognised by the name of their type (the last segment of its path), so
/// `Context`, `carmy::Context` and a re-exported `Context` are all the context, and any
/// `State<T>` is shared state. The compiler then checks that they are Carmy's: a type of your
/// own named `Context`, or another crate's `State<T>` such as axum's, is one error on that type
/// saying it was taken for Carmy's. Import it under another name (`use axum::extract::State as
/// AxumState;`), or put it in the input struct. The other way round, Carmy's types renamed
/// (`use carmy::State as Shared;`) are not recognised: they would be taken for the input.
///
/// The function cannot be generic, take `self` or be anything but `async`.
///
/// # Return type
///
/// `Result<T, E>` (or an alias such as `io::Result<T>`), where `T` implements
/// `serde::Serialize` and `schemars::JsonSchema` (`()` for no output) and `E: Into<AgentError>`.
///
/// # What it generates
///
/// The function becomes a unit struct of the same name implementing `carmy::Tool`; pass that
/// value to `Carmy::tool`. The body moves, unchanged, into an associated function `call`. You
/// can still call the tool directly, e.g. in unit tests, in two ways:
///
/// - `search(input).await`: through `Deref` to a function pointer, which boxes the future;
/// - `search::call(input).await`: the original `async fn`, unboxed.
///
/// ```
/// # use carmy::prelude::*;
/// # use schemars::JsonSchema;
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Deserialize, JsonSchema)]
/// # struct SearchInput { query: String }
/// # #[derive(Serialize, JsonSchema)]
/// # struct SearchOutput { skus: Vec<String> }
/// #[tool(effect = "read")]
/// async fn search(input: SearchInput, ctx: &Context) -> Result<SearchOutput, AgentError> {
///     Ok(SearchOutput { skus: vec![input.query] })
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let ctx = Context::new();
/// let boxed = search(SearchInput { query: "tea".into() }, &ctx).await?;
/// let unboxed = search::call(SearchInput { query: "tea".into() }, &ctx).await?;
/// assert_eq!(boxed.skus, unboxed.skus);
/// # Ok::<(), AgentError>(())
/// # }).unwrap();
/// ```
///
/// Doc comments and `#[cfg]` apply to the struct; other attributes (`#[tracing::instrument]`,
/// lint levels) stay on the function, now `call`.
///
/// Because the name is now a unit struct, two things that worked on the function change:
/// `let search = ...;` in the same scope is a pattern matching the struct, not a new binding
/// (pick another name), and `search` no longer coerces to a `fn` item type; use `*search`
/// (the boxed-future pointer) or `search::call`.
///
/// # Expansion
///
/// For `async fn search(input: SearchInput, ctx: &Context, db: State<Db>) -> Result<SearchOutput,
/// AgentError>`, `cargo expand` shows (derives and attributes left out, locals shortened):
///
/// ```text
/// pub struct search;
/// impl search {
///     pub async fn call(input: SearchInput, ctx: &Context, db: State<Db>) -> Result<SearchOutput, AgentError> { .. }
/// }
/// const _: () = {
///     use ::carmy::__private as __carmy;
///     impl ::core::ops::Deref for search {
///         type Target = fn(SearchInput, &Context, State<Db>) -> __carmy::BoxFuture<'_, Result<SearchOutput, AgentError>>;
///         fn deref(&self) -> &Self::Target {
///             &((|input, context, state| __carmy::box_future(search::call(input, context, state))) as Self::Target)
///         }
///     }
///     impl __carmy::Tool for search {
///         type Input = SearchInput;
///         type Output = SearchOutput;
///         const SPEC: __carmy::ToolSpec = __carmy::ToolSpec::new("search", __carmy::Effect::Read)
///             .description("..");
///         fn requirements(requirements: &mut __carmy::Requirements) {
///             <State<Db> as __carmy::StateParam>::require(requirements);
///         }
///         async fn run(&self, input: Self::Input, invocation: __carmy::Invocation)
///             -> __carmy::Result<Self::Output, __carmy::AgentError> {
///             let result = (*search)(
///                 input,
///                 <Context as __carmy::ContextParam>::borrowed(&invocation),
///                 <State<Db> as __carmy::StateParam>::get(&invocation),
///             ).await;
///             __carmy::into_agent_result(result)
///         }
///     }
/// };
/// ```
///
/// `ContextParam` and `StateParam` are implemented for Carmy's `Context` and `State<T>` only:
/// they are how the compiler checks what the macro took from a name. The full, formatted
/// expansions of a few tools are in `carmy-macros/tests/expand`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    match tool::ToolDef::new(args.into(), item.clone()) {
        Ok(tool) => expand::tool(&tool),
        Err(failure) => fallback::expansion(item, failure),
    }
    .into()
}
