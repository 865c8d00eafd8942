//! A `Prompt` behind a JSON-in, messages-out object, beside the trait it erases so that the
//! catalog's entries can hold any prompt.

use std::sync::Arc;

use serde_json::Value;

use super::{IntoMessages, Messages, Prompt};
use crate::{
    completion::CompletionRequest,
    erased::{BoxFuture, CompletionFuture},
    error::AgentError,
    tool::Invocation,
};

/// A decoded render, ready to run once.
pub(crate) type PreparedRender =
    Box<dyn FnOnce(Invocation) -> BoxFuture<Result<Messages, AgentError>> + Send>;

pub(crate) trait ErasedPrompt: Send + Sync + 'static {
    /// Decodes validated arguments into the prompt's input type.
    fn prepare(self: Arc<Self>, arguments: Value) -> Result<PreparedRender, AgentError>;

    /// Suggests values for an argument.
    fn complete<'a>(&'a self, request: CompletionRequest<'a>) -> CompletionFuture<'a>;
}

/// Owns the user's prompt.
pub(crate) struct ErasedRender<P>(pub(crate) P);

impl<P: Prompt> ErasedPrompt for ErasedRender<P> {
    fn prepare(self: Arc<Self>, arguments: Value) -> Result<PreparedRender, AgentError> {
        let input: P::Input = serde_json::from_value(arguments).map_err(|err| {
            AgentError::invalid_arguments(
                format!("the prompt's arguments do not decode: {err}"),
                serde_json::json!({ "path": "", "reason": err.to_string() }),
            )
        })?;
        Ok(Box::new(move |invocation| {
            Box::pin(async move {
                let output = self.0.render(input, invocation).await?;
                Ok(output.into_messages())
            })
        }))
    }

    fn complete<'a>(&'a self, request: CompletionRequest<'a>) -> CompletionFuture<'a> {
        Box::pin(self.0.complete(request))
    }
}
