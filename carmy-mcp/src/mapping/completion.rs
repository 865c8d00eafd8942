//! `completion/complete`: an MCP reference becomes the runtime's completion target, and its
//! suggestions a `CompleteResult` (at most 100 values, the total, whether there are more).

use carmy_core::{CompletionTarget, Completions, Outcome, OutcomeKind};
use rmcp::model::{CompleteResult, CompletionInfo, ErrorData, Reference};

/// What `reference` asks to complete: a prompt by name, or a resource template by its URI
/// template (a kind of reference this version does not know names nothing).
pub(crate) fn target(reference: &Reference) -> CompletionTarget {
    match reference {
        Reference::Prompt(prompt) => CompletionTarget::Prompt(prompt.name.clone()),
        Reference::Resource(resource) => CompletionTarget::Resource(resource.uri.clone()),
        _ => CompletionTarget::Prompt(String::new()),
    }
}

/// The answer: the suggestions, or `-32602` for a reference or an argument that names nothing
/// or that the caller may not use, `-32603` for any other failure; each error carries the
/// `{"error": {...}}` envelope.
pub(crate) fn complete_result(outcome: Outcome<Completions>) -> Result<CompleteResult, ErrorData> {
    match outcome.result {
        Ok(completions) => {
            let total = u32::try_from(completions.total()).unwrap_or(u32::MAX);
            let info = CompletionInfo::with_pagination(
                completions.values().to_vec(),
                Some(total),
                completions.has_more(),
            )
            .map_err(|reason| ErrorData::internal_error(reason, None))?;
            Ok(CompleteResult::new(info))
        }
        Err(error) => Err(super::error::request_error(
            &error,
            outcome.kind == OutcomeKind::Unroutable,
        )),
    }
}
