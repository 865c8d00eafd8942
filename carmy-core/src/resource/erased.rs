//! A `Resource` behind a JSON-in, contents-out object, beside the trait it erases so that the
//! catalog's entries can hold any resource.

use std::sync::Arc;

use serde_json::Value;

use super::{Contents, IntoContents, Resource};
use crate::{
    completion::CompletionRequest,
    erased::{BoxFuture, CompletionFuture},
    error::AgentError,
    tool::Invocation,
};

/// A decoded read, ready to run once.
pub(crate) type PreparedRead =
    Box<dyn FnOnce(Invocation) -> BoxFuture<Result<Contents, AgentError>> + Send>;

pub(crate) trait ErasedResource: Send + Sync + 'static {
    /// Decodes a URI's validated variables into the resource's input type.
    fn prepare(self: Arc<Self>, variables: Value) -> Result<PreparedRead, AgentError>;

    /// Suggests values for a variable.
    fn complete<'a>(&'a self, request: CompletionRequest<'a>) -> CompletionFuture<'a>;
}

/// Owns the user's resource.
pub(crate) struct ErasedRead<R>(pub(crate) R);

impl<R: Resource> ErasedResource for ErasedRead<R> {
    fn prepare(self: Arc<Self>, variables: Value) -> Result<PreparedRead, AgentError> {
        let input: R::Input = serde_json::from_value(variables).map_err(|err| {
            AgentError::invalid_arguments(
                format!("the URI's variables do not decode: {err}"),
                serde_json::json!({ "path": "", "reason": err.to_string() }),
            )
        })?;
        Ok(Box::new(move |invocation| {
            Box::pin(async move {
                let output = self.0.read(input, invocation).await?;
                Ok(output.into_contents())
            })
        }))
    }

    fn complete<'a>(&'a self, request: CompletionRequest<'a>) -> CompletionFuture<'a> {
        Box::pin(self.0.complete(request))
    }
}
