//! `prompts/get`: a prompt's name and arguments, and who answers its questions.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Operation, Request, sealed::Sealed};
use crate::ask::{Asker, CallAsker};

/// A prompt get: the prompt's name, its arguments, and who answers its questions. Built by
/// [`Request::get_prompt`].
#[derive(Debug)]
pub struct GetPrompt {
    pub(in crate::runtime) prompt: String,
    pub(in crate::runtime) arguments: Map<String, Value>,
    pub(in crate::runtime) asker: Option<CallAsker>,
}

impl Sealed for GetPrompt {}

impl Operation for GetPrompt {
    const METHOD: &'static str = "prompts/get";

    fn target(&self) -> &str {
        &self.prompt
    }
}

impl Request<GetPrompt> {
    /// A get of `prompt`, without arguments yet, anonymous.
    ///
    /// ```
    /// use carmy_core::{Context, Request};
    ///
    /// let request = Request::get_prompt("review_order")
    ///     .argument("order_id", "ord-1001")
    ///     .context(Context::new().with_principal("alice"));
    /// assert_eq!(request.prompt(), "review_order");
    /// ```
    pub fn get_prompt(prompt: impl Into<String>) -> Self {
        Self::of(GetPrompt {
            prompt: prompt.into(),
            arguments: Map::new(),
            asker: None,
        })
    }

    /// Who answers the prompt's questions ([`Context::ask`](crate::Context::ask)), as for a
    /// call ([`Request::asker`]).
    pub fn asker(mut self, asker: impl Asker) -> Self {
        self.operation.asker = Some(CallAsker(Arc::new(asker)));
        self
    }

    /// Adds the argument `name`.
    pub fn argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.operation
            .arguments
            .insert(name.into(), Value::String(value.into()));
        self
    }

    /// Replaces the arguments with `arguments` (as a protocol sent them).
    pub fn arguments(mut self, arguments: Map<String, Value>) -> Self {
        self.operation.arguments = arguments;
        self
    }

    /// The prompt's name.
    pub fn prompt(&self) -> &str {
        &self.operation.prompt
    }
}
