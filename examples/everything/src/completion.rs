//! Completion: words that start with what the user typed.

use carmy::{AgentError, Completions, execution::CompletionRequest};

/// Words the suite's completion scenario types the start of (`par`).
const WORDS: &[&str] = &["paris", "park", "party", "hello", "world"];

/// The words that start with what the user typed.
pub async fn test_words(request: CompletionRequest<'_>) -> Result<Completions, AgentError> {
    Ok(Completions::starting_with(
        request.value(),
        WORDS.iter().copied(),
    ))
}
