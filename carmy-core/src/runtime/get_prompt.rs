//! `prompts/get`: a prompt resolved by name, its arguments checked against its input, admitted under
//! the runtime's capacity, run under the guard, what it embeds held to the caller's rules,
//! recorded.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, field};

use super::{
    Begun, Ending, FromAnswer, GetPrompt, Inner, Request, Runtime, guard::Work, read::MAX_URI_ECHO,
};
use crate::{
    catalog::MAX_TOOL_NAME_LEN,
    content::ContentBlock,
    context::{Asking, Context},
    error::AgentError,
    excerpt::excerpt,
    execution::{ExecutionId, ExecutionKind, ExecutionStatus},
    outcome::{Outcome, OutcomeKind},
    prompt::Messages,
};

impl Runtime {
    /// Renders the prompt `request` names. A name that names no prompt is `PROMPT_NOT_FOUND`
    /// with [`OutcomeKind::Unroutable`]; a missing required argument, or one the prompt does not
    /// take, is `INVALID_ARGUMENTS` naming it. The render runs under its deadline and the
    /// request's cancellation, its panics caught, and is recorded like a call.
    pub async fn get_prompt(&self, request: Request<GetPrompt>) -> Outcome<Messages> {
        if self.inner.middleware.is_empty() {
            return self.get_prompt_served(request).await;
        }
        FromAnswer::from_answer(self.through(request.into()).await)
    }

    /// [`get_prompt`](Self::get_prompt), inside the middleware.
    pub(super) async fn get_prompt_served(&self, request: Request<GetPrompt>) -> Outcome<Messages> {
        let execution_id = ExecutionId::generate();
        let span = tracing::info_span!(
            "carmy.get_prompt",
            prompt = %excerpt(request.prompt(), MAX_TOOL_NAME_LEN),
            execution_id = %execution_id,
            status = field::Empty,
            duration_ms = field::Empty,
        );
        let Request {
            operation:
                GetPrompt {
                    prompt,
                    arguments,
                    asker,
                },
            context,
            cancellation,
        } = request;
        let begun = Begun::now(execution_id, ExecutionKind::Prompt, prompt);
        let asking = asker.map(|asker| Asking {
            task: None,
            asker,
            suspension: Arc::default(),
        });
        let ending = self
            .inner
            .get_prompt_steps(&begun, arguments, &context, &cancellation, asking)
            .instrument(span.clone())
            .await;
        let ending = embedding_readable(ending, &context)
            .within(self.inner.limits.max_result_bytes, "prompt");
        let duration = begun.started.elapsed();
        let outcome = self.inner.conclude(begun, ending, duration);
        span.record("status", outcome.status.as_str());
        span.record("duration_ms", duration.as_secs_f64() * 1e3);
        outcome
    }
}

impl Inner {
    async fn get_prompt_steps(
        &self,
        begun: &Begun,
        arguments: Map<String, Value>,
        context: &Context,
        cancellation: &CancellationToken,
        asking: Option<Asking>,
    ) -> Ending<'_, Messages> {
        // Refused before anything is resolved: whether it exists is none of this caller's
        // business.
        if !context.allows_prompt(&begun.named) {
            return Ending {
                target: None,
                status: ExecutionStatus::Rejected,
                result: Err(AgentError::prompt_not_allowed(&excerpt(
                    &begun.named,
                    MAX_TOOL_NAME_LEN,
                ))),
                kind: OutcomeKind::Result,
                running: None,
            };
        }
        // Resolve.
        let Some(entry) = self.catalog.prompt(&begun.named) else {
            return Ending {
                target: None,
                status: ExecutionStatus::Rejected,
                result: Err(AgentError::prompt_not_found(&excerpt(
                    &begun.named,
                    MAX_TOOL_NAME_LEN,
                ))),
                kind: OutcomeKind::Unroutable,
                running: None,
            };
        };
        let rejected =
            |error| Ending::stopped(Some(entry.name()), ExecutionStatus::Rejected, error);
        // Validate, and decode.
        let prepared = match entry
            .validate_arguments(arguments)
            .and_then(|arguments| Arc::clone(&entry.prompt).prepare(arguments))
        {
            Ok(prepared) => prepared,
            Err(error) => return rejected(error),
        };
        self.run_admitted(
            Work {
                kind: ExecutionKind::Prompt,
                target: entry.name(),
                timeout: entry.timeout(),
                what: "prompt",
            },
            begun,
            context,
            cancellation,
            asking,
            prepared,
        )
        .await
    }
}

/// The same ending, unless the messages embed a resource the caller may not read: then it
/// failed with `RESOURCE_NOT_ALLOWED`, and they are dropped. A prompt shows what it embeds, so
/// its caller may get it only if a read would give it the same (an embedded resource that does
/// not say its URI cannot be shown to be readable).
fn embedding_readable<'a>(
    mut ending: Ending<'a, Messages>,
    context: &Context,
) -> Ending<'a, Messages> {
    let Ok(messages) = &ending.result else {
        return ending;
    };
    if !context.restricts_resources() {
        return ending;
    }
    let unreadable = messages.iter().find_map(|message| match message.content() {
        ContentBlock::Resource(content) => {
            let uri = content.uri_of().unwrap_or_default();
            (!context.allows_resource(uri)).then_some(uri)
        }
        _ => None,
    });
    if let Some(uri) = unreadable {
        let error = AgentError::embedded_resource_not_allowed(
            ending.target.unwrap_or_default(),
            &excerpt(uri, MAX_URI_ECHO),
        );
        ending.status = ExecutionStatus::Failed;
        ending.result = Err(error);
    }
    ending
}
