//! Type erasure: a `Tool` with typed input and output behind a JSON-in, JSON-out object, a
//! `Resource` behind a JSON-in, contents-out one, a `Prompt` behind a JSON-in, messages-out one.

use std::{future::Future, pin::Pin, sync::Arc};

use serde_json::Value;

use crate::{
    completion::{CompletionRequest, Completions},
    error::AgentError,
    prompt::{IntoMessages, Messages, Prompt},
    resource::{Contents, IntoContents, Resource},
    tool::{Invocation, Tool},
};

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

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

/// A decoded read, ready to run once.
pub(crate) type PreparedRead =
    Box<dyn FnOnce(Invocation) -> BoxFuture<Result<Contents, AgentError>> + Send>;

/// A completion's future, borrowing what it was asked.
pub(crate) type CompletionFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Completions, AgentError>> + Send + 'a>>;

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
