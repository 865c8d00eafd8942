//! Completions: a prompt's argument or a resource template's variable, resolved, checked, and
//! its values suggested under the guard, held to the caller's rules when they name resources,
//! recorded like any execution.

use std::collections::HashMap;

use tokio_util::sync::CancellationToken;
use tracing::{Instrument, field};

use super::{Begun, Ending, Inner, Runtime, guard::guarded};
use crate::{
    catalog::MAX_TOOL_NAME_LEN,
    completion::{CompletionRequest, Completions},
    context::Context,
    error::AgentError,
    excerpt::excerpt,
    execution::{ExecutionId, ExecutionKind, ExecutionStatus},
    outcome::{Outcome, OutcomeKind},
};

/// The longest value a completion is asked about, in bytes.
const MAX_TYPED_LEN: usize = 1024;

/// What a completion is for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionTarget {
    /// The prompt of this name.
    Prompt(String),
    /// The resource whose URI template is this.
    Resource(String),
}

/// One completion: an argument of a target, what the user typed, and what the host knows.
///
/// ```
/// use carmy_core::{CompleteRequest, CompletionTarget};
///
/// let request = CompleteRequest::new(CompletionTarget::Prompt("review_order".into()), "order_id", "ord-1");
/// ```
#[derive(Debug)]
#[must_use]
pub struct CompleteRequest {
    target: CompletionTarget,
    argument: String,
    value: String,
    arguments: HashMap<String, String>,
    context: Context,
    cancellation: CancellationToken,
}

impl CompleteRequest {
    /// Values for `argument` of `target`, the user having typed `value`.
    pub fn new(
        target: CompletionTarget,
        argument: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            target,
            argument: argument.into(),
            value: value.into(),
            arguments: HashMap::new(),
            context: Context::new(),
            cancellation: CancellationToken::new(),
        }
    }

    /// The other arguments the user already chose.
    pub fn arguments(mut self, arguments: HashMap<String, String>) -> Self {
        self.arguments = arguments;
        self
    }

    /// The trusted context: principal, grants, extensions.
    pub fn context(mut self, context: Context) -> Self {
        self.context = context;
        self
    }

    /// A token whose cancellation stops the completion.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = token;
        self
    }
}

impl Runtime {
    /// Suggests values for an argument of a prompt or a variable of a resource template. A
    /// target that names nothing is unroutable (`PROMPT_NOT_FOUND`, `RESOURCE_NOT_FOUND`); a
    /// name that is not one of its arguments is `INVALID_ARGUMENTS`; an argument that does not
    /// complete has no suggestion. At most [`MAX_COMPLETIONS`](crate::MAX_COMPLETIONS) values
    /// come back, the rest counted.
    pub async fn complete(&self, request: CompleteRequest) -> Outcome<Completions> {
        let execution_id = ExecutionId::generate();
        let span = tracing::info_span!(
            "carmy.complete",
            argument = %excerpt(&request.argument, MAX_TOOL_NAME_LEN),
            execution_id = %execution_id,
            status = field::Empty,
        );
        let named = match &request.target {
            CompletionTarget::Prompt(name) | CompletionTarget::Resource(name) => name.clone(),
        };
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
        request: &CompleteRequest,
    ) -> Ending<'_, Completions> {
        // A prompt or template the caller may not use is not completed for it either.
        let allowed = match &request.target {
            CompletionTarget::Prompt(name) => request.context.allows_prompt(name),
            CompletionTarget::Resource(template) => request.context.allows_resource(template),
        };
        if !allowed {
            let named = excerpt(&begun.named, MAX_TOOL_NAME_LEN);
            let error = match &request.target {
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
        let found = match &request.target {
            CompletionTarget::Prompt(name) => self.catalog.prompt(name).map(|prompt| {
                let arguments = prompt.arguments().iter().map(|argument| argument.name());
                Target {
                    name: prompt.name(),
                    is_argument: arguments.clone().any(|name| name == request.argument),
                    completes: prompt.completes(),
                    timeout: prompt.timeout(),
                    complete: Complete::Prompt(prompt),
                }
            }),
            CompletionTarget::Resource(template) => self
                .catalog
                .resources()
                .find(|resource| resource.is_template() && resource.uri() == template)
                .map(|resource| Target {
                    name: resource.name(),
                    is_argument: resource
                        .template()
                        .variables()
                        .any(|name| name == request.argument),
                    completes: resource.completes(),
                    timeout: resource.timeout(),
                    complete: Complete::Resource(resource),
                }),
        };
        let Some(target) = found else {
            let named = excerpt(&begun.named, MAX_TOOL_NAME_LEN);
            let error = match &request.target {
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
            let argument = excerpt(&request.argument, MAX_TOOL_NAME_LEN);
            return rejected(AgentError::invalid_arguments(
                format!("`{}` has no argument `{argument}` to complete", target.name),
                serde_json::json!({ "argument": argument }),
            ));
        }
        if request.value.len() > MAX_TYPED_LEN {
            return rejected(AgentError::invalid_arguments(
                format!("the value to complete is longer than {MAX_TYPED_LEN} bytes"),
                serde_json::json!({ "max_length": MAX_TYPED_LEN }),
            ));
        }
        if !target.completes.contains(&request.argument.as_str()) {
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
            argument: &request.argument,
            value: &request.value,
            arguments: &request.arguments,
            context: &request.context,
            states: &self.states,
            records: &records,
        };
        let suggested = match target.complete {
            Complete::Prompt(prompt) => prompt.prompt.complete(asked),
            Complete::Resource(resource) => resource.resource.complete(asked),
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
            completions.keep(&request.argument, &request.arguments, readable);
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
    complete: Complete<'c>,
}

enum Complete<'c> {
    Prompt(&'c crate::prompt::PromptEntry),
    Resource(&'c crate::resource::ResourceEntry),
}
