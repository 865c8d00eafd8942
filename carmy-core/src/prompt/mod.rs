//! Prompts: templates of messages a client offers its user (a slash command, a menu entry).
//! A prompt's arguments are the fields of its input, described by their doc comments, required
//! unless optional; rendering returns [`Messages`].
//!
//! Renders go through the runtime as tool calls do ([`Runtime::get_prompt`](crate::Runtime::get_prompt)):
//! resolved by name, the arguments checked against the input's schema (a missing required one
//! is `INVALID_ARGUMENTS` naming it), admitted under the same capacity, run under a deadline and
//! the request's cancellation with panics contained, and recorded.

mod entry;
mod erased;
mod messages;
pub(crate) mod register;

use std::{future::Future, time::Duration};

pub use entry::{PromptArgument, PromptEntry};
pub use messages::{IntoMessages, Message, MessageContent, Messages, Role};

use crate::{
    completion::{CompletionRequest, Completions},
    error::AgentError,
    state::Requirements,
    tool::{Invocation, ToolInput},
};

/// A prompt: static metadata, the input its arguments decode into, and an async render.
///
/// ```
/// use carmy_core::{AgentError, Carmy, Invocation, Message, Messages, Prompt, PromptSpec};
/// # use schemars::JsonSchema;
/// # use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Review {
///     /// The order to review.
///     order_id: String,
///     /// What to focus on.
///     focus: Option<String>,
/// }
///
/// struct ReviewOrder;
///
/// impl Prompt for ReviewOrder {
///     type Input = Review;
///     type Output = Messages;
///     const SPEC: PromptSpec = PromptSpec::new("review_order").description("Review an order.");
///
///     async fn render(&self, input: Review, _: Invocation) -> Result<Messages, AgentError> {
///         let focus = input.focus.unwrap_or_else(|| "anything unusual".into());
///         Ok(Message::user(format!("Review order {} for {focus}.", input.order_id)).into())
///     }
/// }
///
/// let runtime = Carmy::new().prompt(ReviewOrder).build().unwrap();
/// let prompt = runtime.catalog().prompt("review_order").unwrap();
/// let arguments: Vec<_> = prompt.arguments().iter().map(|a| (a.name(), a.required())).collect();
/// assert_eq!(arguments, [("order_id", true), ("focus", false)]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Carmy prompt",
    label = "not a prompt",
    note = "annotate an `async fn` with `#[carmy::prompt]` and pass the function's name, or implement `Prompt` by hand: an input type whose string fields are the arguments, an output (`Messages`, `Message`, `Vec<Message>`, `String`), a `PromptSpec` and `async fn render`"
)]
pub trait Prompt: Send + Sync + 'static {
    /// The arguments, decoded from a JSON object of strings after validation against this
    /// type's schema; [`NoInput`](crate::NoInput) for a prompt without arguments.
    type Input: ToolInput;
    /// What a render returns.
    type Output: IntoMessages;
    /// Name, title, description.
    const SPEC: PromptSpec;

    /// Declares the `State<T>` values the prompt needs, so `build()` can check they exist.
    fn requirements(requirements: &mut Requirements) {
        let _ = requirements;
    }

    /// The arguments whose values [`complete`](Self::complete) can suggest (none by default).
    const COMPLETES: &'static [&'static str] = &[];

    /// Suggests values for one of [`COMPLETES`](Self::COMPLETES) as the user types it.
    fn complete(
        &self,
        request: CompletionRequest<'_>,
    ) -> impl Future<Output = Result<Completions, AgentError>> + Send {
        let _ = request;
        std::future::ready(Ok(Completions::none()))
    }

    /// Renders the prompt. The runtime has checked the arguments, and enforces the deadline
    /// and cancellation by dropping this future.
    fn render(
        &self,
        input: Self::Input,
        invocation: Invocation,
    ) -> impl Future<Output = Result<Self::Output, AgentError>> + Send;
}

/// A prompt's static metadata. Built in a `const`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromptSpec {
    name: &'static str,
    title: Option<&'static str>,
    description: &'static str,
    timeout: Option<Duration>,
}

impl PromptSpec {
    /// A prompt named `name`.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            title: None,
            description: "",
            timeout: None,
        }
    }

    /// A human-friendly display name.
    pub const fn title(mut self, title: &'static str) -> Self {
        self.title = Some(title);
        self
    }

    /// What the prompt is for.
    pub const fn description(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// The render's own deadline, replacing the runtime's default.
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The name, unique among the catalog's prompts.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The display name, if any.
    pub const fn title_text(&self) -> Option<&'static str> {
        self.title
    }

    /// The description.
    pub const fn description_text(&self) -> &'static str {
        self.description
    }

    /// The render's own deadline, if it set one.
    pub const fn timeout_override(&self) -> Option<Duration> {
        self.timeout
    }
}
