//! The `#[tool]`, `#[resource]` and `#[prompt]` attributes of [Carmy](https://docs.rs/carmy).
//! Use them through the `carmy` crate (`carmy::tool`, `carmy::resource`, `carmy::prompt` or
//! `carmy::prelude::*`); this crate's paths are not part of the API.

mod args;
mod completion;
mod description;
mod errors;
mod expand;
mod fallback;
mod function;
mod item;
mod kind;
mod mime;
mod name;
mod prompt;
mod rate_limit;
mod resource;
mod signature;
#[cfg(test)]
mod snapshots;
mod suggest;
#[cfg(test)]
mod test_util;
mod timeout;
mod tokens;
mod tool;
mod types;
mod uri_template;

use proc_macro::TokenStream;

use crate::{function::Function, prompt::PromptArgs, resource::ResourceArgs, tool::ToolArgs};

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
/// | `transactional` | flag, or `= true` / `= false`: its effects are its writes to `ctx.records()`, committed with its outcome (`write` and `destructive` tools) | `false` |
/// | `parallel_safe` | `= true` / `= false` | `true` for `none` and `read`, else `false` |
/// | `confirmation` | `"required"` or `"none"` | `"required"` for `destructive`, else `"none"` |
/// | `task` | `"optional"` (a task when the caller can follow one), `"required"` (only a task) or `"forbidden"` | `"forbidden"` |
/// | `task_after` | a duration: how long a call runs as a plain call before it becomes a task; only with `task` | a task when the tool starts |
/// | `rate_limit` | how often one principal may call it: `"30/min"`, `"5/s, burst 10"`, `"1000/h"`, or `"unlimited"` to exempt it from the runtime's default | the runtime's (`Carmy::rate_limit`; none by default) |
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
/// - at most one **input**: a struct whose fields are the arguments, implementing
///   `serde::Deserialize` and `schemars::JsonSchema`, decoded from the call's JSON arguments, so
///   an owned type (`String` fields, not `&str` or `Cow<'_, str>`). MCP passes arguments as one
///   JSON object: `build()` refuses an input whose schema is not an object's (a bare `String`).
///   Its parameter may be any
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
/// The function becomes a unit struct of the same name implementing `carmy::catalog::Tool`; pass that
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
    match Function::<ToolArgs>::new(args.into(), item.clone()) {
        Ok(tool) => expand::tool(&tool),
        Err(failure) => fallback::expansion(item, failure, expand::tool),
    }
    .into()
}

/// Turns an `async fn` into a Carmy resource: contents a client reads by URI.
///
/// ```
/// use carmy::prelude::*;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct ProductRef {
///     /// The product's id, bound from the URI.
///     id: String,
/// }
///
/// /// One product, as JSON.
/// #[resource(uri = "shop://products/{id}", mime_type = "application/json")]
/// async fn product(input: ProductRef) -> Result<String, AgentError> {
///     Ok(format!(r#"{{"id":"{}"}}"#, input.id))
/// }
///
/// /// How returns work.
/// #[resource(uri = "shop://policies/returns", mime_type = "text/markdown")]
/// async fn returns() -> Result<String, AgentError> {
///     Ok("Within 30 days.".into())
/// }
///
/// let runtime = Carmy::new().resource(product).resource(returns).build().unwrap();
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let outcome = runtime.read(carmy::execution::Request::read("shop://products/sku-1")).await;
/// let contents = outcome.result.unwrap();
/// let content = contents.iter().next().unwrap();
/// assert_eq!(content.body(), &carmy::execution::Body::Text(r#"{"id":"sku-1"}"#.into()));
/// # });
/// ```
///
/// # Attribute keys
///
/// | key | value | default |
/// |---|---|---|
/// | `uri` | **required**: a fixed URI (`"shop://policies/returns"`) or a URI template (`"shop://products/{id}"`) | |
/// | `name` | 1–128 characters of `A-Z a-z 0-9 _ - .`, unique among resources | the function's name |
/// | `title` | a display name | none |
/// | `description` | what the resource holds, for the model | the doc comment |
/// | `mime_type` | `type/subtype`, with optional parameters: `"application/json"`, `"text/plain; charset=utf-8"` | none |
/// | `complete` | `complete(variable = completer, ...)`: the `async fn` that suggests values for each variable of the template (see [`#[prompt]`](macro@prompt)) | nothing completes |
/// | `timeout` | a duration: `"500ms"`, `"30s"`, `"2m"` | the runtime's default |
/// | `crate` | the path to the `carmy` crate, e.g. `"::my_carmy"` | `::carmy` |
///
/// Mistakes are compile errors that point at the offending tokens, all reported at once.
///
/// # The URI and the input
///
/// A template is RFC 6570 level 1: `{name}` variables of letters, digits and `_`, each standing
/// for one percent-encoded segment of text. Operators (`{+path}`, `{?query}`), two variables with
/// nothing between them, and a variable used twice are compile errors, as are a template with
/// variables on a function without an input, and a fixed URI on a function with one.
///
/// The variables bind to the fields of the input, which derives `Deserialize` and `JsonSchema`
/// like a tool's; each field is a `String`, since a URI binds text, and the input's schema
/// (a `pattern`, a `format`) is checked before the function runs. The macro never reads the
/// input's fields: a variable that is no field, a field that is not a string, or a required
/// field that is no variable is refused by `build()`, which names the resource.
///
/// ```
/// # use carmy::prelude::*;
/// # use schemars::JsonSchema;
/// # use serde::Deserialize;
/// #[derive(Deserialize, JsonSchema)]
/// struct ProductRef {
///     id: String,
/// }
///
/// #[resource(uri = "shop://products/{sku}")]
/// async fn product(input: ProductRef) -> Result<String, AgentError> {
///     Ok(input.id)
/// }
///
/// let error = Carmy::new().resource(product).build().unwrap_err();
/// assert!(error.to_string().contains("`{sku}` in `shop://products/{sku}` is not a field"));
/// ```
///
/// # Parameters
///
/// As for [`#[tool]`](macro@tool), in any order: at most one **input** (required by a template,
/// absent for a fixed URI), at most one **context** (`&Context` or `Context`: who is reading),
/// and any number of **`State<T>`** registered with `Carmy::state`. They are recognised by the
/// name of their type, and the compiler checks the guess, as for tools.
///
/// # Return type
///
/// `Result<T, E>` with `E: Into<AgentError>`, where `T` is what the read returns:
/// - `String`: text, of the resource's MIME type;
/// - `Vec<u8>`: bytes, served as a base64 `blob`;
/// - `carmy::Content`: one text or blob with its own MIME type (`Content::json(&value)?`);
/// - `carmy::Contents`: several, each possibly at its own URI.
///
/// An `Err` is the read's result, recorded as failed, with its code and message for the client.
///
/// # What it generates
///
/// What `#[tool]` generates, with `carmy::catalog::Resource` in place of `carmy::catalog::Tool`: a unit struct of
/// the function's name to pass to `Carmy::resource`, the body in `product::call`, and the
/// direct call `product(input).await`. For `async fn product(input: ProductRef, db: State<Db>)
/// -> Result<String, AgentError>`:
///
/// ```text
/// impl __carmy::Resource for product {
///     type Input = ProductRef;
///     type Output = String;
///     const SPEC: __carmy::ResourceSpec = __carmy::ResourceSpec::new("product", "shop://products/{id}")
///         .description("..")
///         .mime_type("application/json");
///     fn requirements(requirements: &mut __carmy::Requirements) {
///         <State<Db> as __carmy::StateParam>::require(requirements);
///     }
///     async fn read(&self, input: Self::Input, invocation: __carmy::Invocation)
///         -> __carmy::Result<Self::Output, __carmy::AgentError> {
///         let result = (*product)(input, <State<Db> as __carmy::StateParam>::get(&invocation)).await;
///         __carmy::into_agent_result(result)
///     }
/// }
/// ```
///
/// The full, formatted expansions are in `carmy-macros/tests/expand` (`resource_*.rs`).
#[proc_macro_attribute]
pub fn resource(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    match Function::<ResourceArgs>::new(args.into(), item.clone()) {
        Ok(resource) => expand::resource(&resource),
        Err(failure) => fallback::expansion(item, failure, expand::resource),
    }
    .into()
}

/// Turns an `async fn` into a Carmy prompt: messages a client offers its user.
///
/// ```
/// use carmy::prelude::*;
/// use carmy::{Completions, Message, Messages};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Review {
///     /// The order to review.
///     order_id: String,
///     /// What to look at first.
///     focus: Option<String>,
/// }
///
/// async fn order_ids(typed: &str) -> Result<Completions, AgentError> {
///     Ok(Completions::starting_with(typed, ["ord-1001", "ord-1002"]))
/// }
///
/// /// Review an order.
/// #[prompt(title = "Review an order", complete(order_id = order_ids))]
/// async fn review_order(input: Review) -> Result<Messages, AgentError> {
///     let focus = input.focus.unwrap_or_else(|| "anything unusual".into());
///     Ok(Messages::new()
///         .with(Message::user(format!("Review order {} for {focus}.", input.order_id)))
///         .with(Message::assistant("Looking at it.")))
/// }
///
/// let runtime = Carmy::new().prompt(review_order).build().unwrap();
/// let prompt = runtime.catalog().prompt("review_order").unwrap();
/// let arguments: Vec<_> = prompt.arguments().iter().map(|a| (a.name(), a.required())).collect();
/// assert_eq!(arguments, [("order_id", true), ("focus", false)]);
/// assert_eq!(prompt.completes(), ["order_id"]);
/// ```
///
/// # Attribute keys
///
/// | key | value | default |
/// |---|---|---|
/// | `name` | 1–128 characters of `A-Z a-z 0-9 _ - .`, unique among prompts | the function's name |
/// | `title` | a display name | none |
/// | `description` | what the prompt is for | the doc comment |
/// | `complete` | `complete(argument = completer, ...)`: the `async fn` that suggests each argument's values | nothing completes |
/// | `timeout` | a duration: `"500ms"`, `"30s"`, `"2m"` | the runtime's default |
/// | `crate` | the path to the `carmy` crate, e.g. `"::my_carmy"` | `::carmy` |
///
/// Mistakes are compile errors that point at the offending tokens, all reported at once.
///
/// # Arguments and parameters
///
/// The arguments are the fields of the input (at most one, deriving `Deserialize` and
/// `JsonSchema`), in declared order, each a `String` (required) or an `Option<String>`, described
/// by its doc comment. The macro never reads the input's fields: a field that is not a string,
/// or a name in `complete(...)` that is no field, is refused by `build()`, which names the
/// prompt. A prompt without an input takes no argument. As for [`#[tool]`](macro@tool), a
/// `&Context` and any number of `State<T>` may be taken too, in any order.
///
/// # Completion
///
/// `complete(order_id = order_ids, ...)` is also a key of [`#[resource]`](macro@resource),
/// where it names variables of the template. A completer is a path to an `async fn` taking what
/// the user typed (`&str`) or the whole `carmy::execution::CompletionRequest<'_>`, and returning
/// `Result<Completions, E>` or `Result<Vec<String>, E>` with `E: Into<AgentError>`; one of
/// another shape is a compile error on its path. At most 100 values are kept, the rest counted.
///
/// # Return type
///
/// `Result<T, E>` with `E: Into<AgentError>`, where `T` is `carmy::Messages`, one
/// `carmy::Message`, a `Vec<Message>` or a `String` (one user message). A message is from the
/// user or the assistant, and holds text, an image or an embedded resource.
///
/// # What it generates
///
/// What `#[tool]` generates, with `carmy::catalog::Prompt` in place of `carmy::catalog::Tool` (`render` in place
/// of `run`), and for `complete(...)` the prompt's `COMPLETES` and a `complete` that calls each
/// completer through `__private::complete_with`. The full, formatted expansions are in
/// `carmy-macros/tests/expand` (`prompt*.rs`).
#[proc_macro_attribute]
pub fn prompt(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    match Function::<PromptArgs>::new(args.into(), item.clone()) {
        Ok(prompt) => expand::prompt(&prompt),
        Err(failure) => fallback::expansion(item, failure, expand::prompt),
    }
    .into()
}
