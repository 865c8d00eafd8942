//! Type erasure shared by every kind of entry: the boxed futures an erased call returns, and
//! the `Tool` behind a JSON-in, JSON-out object. A resource's and a prompt's erasure live beside
//! their traits (`resource::erased`, `prompt::erased`); this module stays below them.

use std::{future::Future, pin::Pin, sync::Arc};

use serde_json::Value;

use crate::{
    completion::Completions,
    error::AgentError,
    tool::{Invocation, Tool},
};

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A completion's future, borrowing what it was asked.
pub(crate) type CompletionFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Completions, AgentError>> + Send + 'a>>;

/// A decoded call, ready to run once.
pub(crate) type Prepared =
    Box<dyn FnOnce(Invocation) -> BoxFuture<Result<Value, AgentError>> + Send>;

pub(crate) trait ErasedTool: Send + Sync + 'static {
    /// Decodes validated arguments into the tool's input type.
    fn prepare(self: Arc<Self>, arguments: Value) -> Result<Prepared, AgentError>;
}

/// Owns the user's tool.
pub(crate) struct Erased<T>(pub(crate) T);

impl<T: Tool> ErasedTool for Erased<T> {
    fn prepare(self: Arc<Self>, arguments: Value) -> Result<Prepared, AgentError> {
        let input: T::Input = serde_json::from_value(arguments).map_err(|err| {
            AgentError::invalid_arguments(
                format!("arguments do not decode: {err}"),
                serde_json::json!({ "path": "", "reason": err.to_string() }),
            )
        })?;
        Ok(Box::new(move |invocation| {
            Box::pin(async move {
                let output = self.0.run(input, invocation).await?;
                serde_json::to_value(output).map_err(|err| {
                    AgentError::invalid_output(format!(
                        "the tool's output does not serialize: {err}"
                    ))
                })
            })
        }))
    }
}
