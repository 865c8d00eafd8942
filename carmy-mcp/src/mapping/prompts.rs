//! `prompts/list` and `prompts/get`: catalog prompts as MCP `Prompt`s, renders as
//! `GetPromptResult`s or JSON-RPC errors.

use carmy_core::{Message, Messages, Outcome, OutcomeKind, PromptEntry, Role};
use rmcp::model::{
    CacheScope, ErrorData, GetPromptResponse, GetPromptResult, ListPromptsResult, Prompt,
    PromptArgument, PromptMessage,
};

use super::page::{self, Page};

/// How long clients may keep the list of prompts (the catalog never changes while serving).
const LIST_TTL_MS: u64 = 60_000;

/// The catalog's prompts as MCP sees them, built once.
#[derive(Debug, Default)]
pub(crate) struct PromptListing {
    prompts: Vec<Prompt>,
}

impl PromptListing {
    pub(crate) fn new<'a>(entries: impl IntoIterator<Item = &'a PromptEntry>) -> Self {
        Self {
            prompts: entries.into_iter().map(prompt).collect(),
        }
    }

    /// Whether there is anything to list (the `prompts` capability is declared then).
    pub(crate) fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// One page of the prompts a caller may get (`visible`), from `cursor`: cacheable by that
    /// caller only.
    pub(crate) fn page_for(
        &self,
        cursor: Option<&str>,
        visible: impl Fn(&str) -> bool,
    ) -> Result<ListPromptsResult, ErrorData> {
        let seen: Vec<Prompt> = self
            .prompts
            .iter()
            .filter(|prompt| visible(&prompt.name))
            .cloned()
            .collect();
        let Page { items, next } = page::of(&seen, cursor)?;
        let mut result = ListPromptsResult::with_all_items(items)
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(CacheScope::Private);
        result.next_cursor = next;
        Ok(result)
    }

    /// One page of the prompts, from `cursor`.
    pub(crate) fn page(&self, cursor: Option<&str>) -> Result<ListPromptsResult, ErrorData> {
        let Page { items, next } = page::of(&self.prompts, cursor)?;
        let mut result = ListPromptsResult::with_all_items(items)
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public);
        result.next_cursor = next;
        Ok(result)
    }
}

fn prompt(entry: &PromptEntry) -> Prompt {
    let description = Some(entry.description()).filter(|text| !text.is_empty());
    let arguments = entry
        .arguments()
        .iter()
        .map(|argument| {
            let mut mapped =
                PromptArgument::new(argument.name()).with_required(argument.required());
            if let Some(title) = argument.title() {
                mapped = mapped.with_title(title);
            }
            if let Some(description) = argument.description() {
                mapped = mapped.with_description(description);
            }
            mapped
        })
        .collect::<Vec<_>>();
    let mut prompt = Prompt::new(
        entry.name(),
        description,
        (!arguments.is_empty()).then_some(arguments),
    );
    if let Some(title) = entry.title() {
        prompt = prompt.with_title(title);
    }
    prompt
}

/// The answer to `prompts/get`: the messages, or `-32602` for an unknown prompt, bad
/// arguments (saying which), an argument naming what does not exist (the prompt's own
/// `not_found` error) or a prompt the caller may not get (`PROMPT_NOT_ALLOWED`), `-32603` for
/// any other failure; each error carries the `{"error": {...}}` envelope.
pub(crate) fn get_result(
    entry: Option<&PromptEntry>,
    outcome: Outcome<Messages>,
) -> Result<GetPromptResponse, ErrorData> {
    if let OutcomeKind::InputRequired(pending) = &outcome.kind
        && let Ok(asked) = super::input_required(pending)
    {
        return Ok(asked.into());
    }
    let error = match outcome.result {
        Ok(messages) => return Ok(result(entry, messages).into()),
        Err(error) => error,
    };
    Err(super::error::request_error(
        &error,
        outcome.kind == OutcomeKind::Unroutable,
    ))
}

fn result(entry: Option<&PromptEntry>, messages: Messages) -> GetPromptResult {
    let description = messages.description_of().map(str::to_owned).or_else(|| {
        entry
            .map(PromptEntry::description)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    });
    let mapped = GetPromptResult::new(messages.iter().map(message).collect());
    match description {
        Some(description) => mapped.with_description(description),
        None => mapped,
    }
}

fn message(message: &Message) -> PromptMessage {
    let role = match message.role() {
        Role::Assistant => rmcp::model::Role::Assistant,
        _ => rmcp::model::Role::User,
    };
    let content = super::content::block(message.content());
    PromptMessage::new(role, content)
}
