//! Completions: a prompt's argument or a resource template's variable, resolved, checked, and
//! its values suggested under the guard, held to the caller's rules when they name resources,
//! recorded like any execution.

use tracing::{Instrument, field};

use super::{
    Begun, Complete, CompletionTarget, Ending, FromAnswer, Inner, Request, Runtime, guard::guarded,
};
use crate::{
    catalog::MAX_TOOL_NAME_LEN,
    completion::{CompletionRequest, Completions},
    error::AgentError,
    excerpt::excerpt,
    execution::{ExecutionId, ExecutionKind, ExecutionStatus},
    outcome::{Outcome, OutcomeKind},
};

/// The longest value a completion is asked about, in bytes.
const MAX_TYPED_LEN: usize = 1024;

impl Runtime {
    /// Suggests values for an argument of a prompt or a variable of a resource template. A
    /// target that names nothing is unroutable (`PROMPT_NOT_FOUND`, `RESOURCE_NOT_FOUND`); a
    /// name that is not one of its arguments is `INVALID_ARGUMENTS`; an argument that does not
    /// complete has no suggestion. At most [`MAX_COMPLETIONS`](crate::MAX_COMPLETIONS) values
    /// come back, the rest counted.
    pub async fn complete(&self, request: Request<Complete>) -> Outcome<Completions> {
        if self.inner.middleware.is_empty() {
            return self.complete_served(request).await;
        }
        FromAnswer::from_answer(self.through(request.into()).await)
    }

    /// [`complete`](Self::complete), inside the middleware.
    pub(super) async fn complete_served(&self, request: Request<Complete>) -> Outcome<Completions> {
        let execution_id = ExecutionId::generate();
        let span = tracing::info_span!(
            "carmy.complete",
            argument = %excerpt(&request.operation.argument, MAX_TOOL_NAME_LEN),
            execution_id = %execution_id,
            status = field::Empty,
        );
        let named = request.target().to_owned();
        let begun = Begun::now(execution_id, ExecutionKind::Complete, named);
        let ending = self
            .inner
            .complete_steps(&begun, &request)
            .instrument(span.clone())
            .await;
        let duration = begun.started.elapsed();
        let outcome = self.inner.conclude(begun, ending, duration);
        span.record("status", outcome.status.as_str());
        outcome
    }
}

impl Inner {
    async fn complete_steps(
        &self,
        begun: &Begun,
        request: &Request<Complete>,
    ) -> Ending<'_, Completions> {
        // A prompt or template the caller may not use is not completed for it either.
        let allowed = match &request.operation.target {
            CompletionTarget::Prompt(name) => request.context.allows_prompt(name),
            CompletionTarget::Resource(template) => request.context.allows_resource(template),
        };
        if !allowed {
            let named = excerpt(&begun.named, MAX_TOOL_NAME_LEN);
            let error = match &request.operation.target {
                CompletionTarget::Prompt(_) => AgentError::prompt_not_allowed(&named),
                CompletionTarget::Resource(_) => AgentError::resource_not_allowed(&named),
            };
            return Ending {
                target: None,
                status: ExecutionStatus::Rejected,
                result: Err(error),
                kind: OutcomeKind::Result,
                running: None,
            };
        }
        // Resolve.
        let found = match &request.operation.target {
            CompletionTarget::Prompt(name) => self.catalog.prompt(name).map(|prompt| {
                let arguments = prompt.arguments().iter().map(|argument| argument.name());
                Target {
                    name: prompt.name(),
                    is_argument: arguments
                        .clone()
                        .any(|name| name == request.operation.argument),
                    completes: prompt.completes(),
                    timeout: prompt.timeout(),
                    complete: Completer::Prompt(prompt),
                }
            }),
            CompletionTarget::Resource(template) => {
                self.catalog.template(template).map(|resource| Target {
                    name: resource.name(),
                    is_argument: resource
                        .template()
                        .variables()
                        .any(|name| name == request.operation.argument),
                    completes: resource.completes(),
                    timeout: resource.timeout(),
                    complete: Completer::Resource(resource),
                })
            }
        };
        let Some(target) = found else {
            let named = excerpt(&begun.named, MAX_TOOL_NAME_LEN);
            let error = match &request.operation.target {
                CompletionTarget::Prompt(_) => AgentError::prompt_not_found(&named),
                CompletionTarget::Resource(_) => AgentError::resource_not_found(&named),
            };
            return Ending {
                target: None,
                status: ExecutionStatus::Rejected,
                result: Err(error),
                kind: OutcomeKind::Unroutable,
                running: None,
            };
        };
        let rejected = |error| Ending::stopped(Some(target.name), ExecutionStatus::Rejected, error);
        // Validate.
        if !target.is_argument {
            let argument = excerpt(&request.operation.argument, MAX_TOOL_NAME_LEN);
            return rejected(AgentError::invalid_arguments(
                format!("`{}` has no argument `{argument}` to complete", target.name),
                serde_json::json!({ "argument": argument }),
            ));
        }
        if request.operation.value.len() > MAX_TYPED_LEN {
            return rejected(AgentError::invalid_arguments(
                format!("the value to complete is longer than {MAX_TYPED_LEN} bytes"),
                serde_json::json!({ "max_length": MAX_TYPED_LEN }),
            ));
        }
        if !target
            .completes
            .contains(&request.operation.argument.as_str())
        {
            return Ending {
                target: Some(target.name),
                status: ExecutionStatus::Succeeded,
                result: Ok(Completions::none()),
                kind: OutcomeKind::Result,
                running: None,
            };
        }
        // Admit.
        let _capacity = match self.capacity.try_admit() {
            Ok(permit) => permit,
            Err(error) => return rejected(error),
        };
        // Run.
        let running = self.history.start(
            begun.id.clone(),
            ExecutionKind::Complete,
            target.name,
            begun.started_at,
        );
        let records = self.reader();
        let asked = CompletionRequest {
            argument: &request.operation.argument,
            value: &request.operation.value,
            arguments: &request.operation.arguments,
            context: &request.context,
            states: &self.states,
            records: &records,
        };
        let suggested = match target.complete {
            Completer::Prompt(prompt) => prompt.prompt.complete(asked),
            Completer::Resource(resource) => resource.resource.complete(asked),
        };
        let (status, mut result) = guarded(
            suggested,
            target.timeout,
            &request.cancellation,
            "completion",
        )
        .await;
        if let Ok(completions) = &mut result {
            // What the values name is held to the caller's rules, as a read of it would be.
            let context = &request.context;
            let readable = context
                .restricts_resources()
                .then_some(|uri: &str| context.allows_resource(uri));
            completions.keep(
                &request.operation.argument,
                &request.operation.arguments,
                readable,
            );
        }
        Ending {
            target: Some(target.name),
            status,
            result,
            kind: OutcomeKind::Result,
            running: Some(running),
        }
        .within(self.limits.max_result_bytes, "completion")
    }
}

/// What a completion resolved to.
struct Target<'c> {
    name: &'static str,
    is_argument: bool,
    completes: &'static [&'static str],
    timeout: std::time::Duration,
    complete: Completer<'c>,
}

enum Completer<'c> {
    Prompt(&'c crate::prompt::PromptEntry),
    Resource(&'c crate::resource::ResourceEntry),
}
