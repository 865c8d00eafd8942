//! `Request`: one request as the host hands it to the runtime — a tool call, a resource read, a
//! prompt get or a completion — with what the host knows about it.
//!
//! Every request carries the same part (the trusted [`Context`], a cancellation token) and its
//! operation (`CallTool`, `ReadResource`, `GetPrompt`, `Complete`), which says what it asks
//! for. Every step of the runtime sees a `Request<O>`; a step that serves every kind is written
//! once over [`Operation`].

mod call_tool;
mod complete;
mod get_prompt;
mod read_resource;

use tokio_util::sync::CancellationToken;

use crate::context::Context;

pub use call_tool::CallTool;
pub use complete::{Complete, CompletionTarget};
pub use get_prompt::GetPrompt;
pub use read_resource::ReadResource;

/// One request: an operation, the trusted context it runs in, and the token that cancels it.
///
/// Built from its operation's constructor — [`Request::new`] (a tool call), [`Request::read`],
/// [`Request::get_prompt`], [`Request::complete`] — then given its context:
///
/// ```
/// use carmy_core::{Context, Request};
///
/// let alice = Context::new().with_principal("alice");
/// let call = Request::new("place_order", serde_json::json!({ "sku": "MOUSE-1" }))
///     .request_id("order-7f3a")
///     .context(alice.clone());
/// let read = Request::read("shop://products/sku-001").context(alice);
/// assert_eq!((call.method(), call.target()), ("tools/call", "place_order"));
/// assert_eq!((read.method(), read.target()), ("resources/read", "shop://products/sku-001"));
/// ```
#[derive(Debug)]
#[must_use]
pub struct Request<O = CallTool> {
    pub(in crate::runtime) operation: O,
    pub(in crate::runtime) context: Context,
    pub(in crate::runtime) cancellation: CancellationToken,
}

/// What a [`Request`] asks for. Implemented by Carmy's four operations only.
pub trait Operation: sealed::Sealed + Send + 'static {
    /// The protocol's name of the method: `tools/call`, `resources/read`, `prompts/get`,
    /// `completion/complete`.
    const METHOD: &'static str;

    /// What the request names: the tool, the URI, the prompt, the prompt or template
    /// completed.
    fn target(&self) -> &str;
}

mod sealed {
    pub trait Sealed {}
}

impl<O: Operation> Request<O> {
    fn of(operation: O) -> Self {
        Self {
            operation,
            context: Context::new(),
            cancellation: CancellationToken::new(),
        }
    }

    /// The trusted context: principal, grants, extensions (a [`Context`], or a
    /// [`Caller`](crate::Caller)). Anonymous and ungranted until set.
    pub fn context(mut self, context: impl Into<Context>) -> Self {
        self.context = context.into();
        self
    }

    /// A token whose cancellation stops the request.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = token;
        self
    }

    /// The protocol's name of the method ([`Operation::METHOD`]).
    pub fn method(&self) -> &'static str {
        O::METHOD
    }

    /// What the request names ([`Operation::target`]).
    pub fn target(&self) -> &str {
        self.operation.target()
    }

    /// The operation.
    pub fn operation(&self) -> &O {
        &self.operation
    }

    /// The trusted context the request runs in.
    pub fn trusted(&self) -> &Context {
        &self.context
    }
}
