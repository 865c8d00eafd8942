//! Completion: values a client may suggest as its user types a prompt's argument or a resource
//! template's variable. A prompt or a resource lists the arguments it completes
//! ([`Prompt::COMPLETES`](crate::Prompt::COMPLETES)) and answers in `complete`; the runtime
//! runs it like any execution ([`Runtime::complete`](crate::Runtime::complete)) and keeps at
//! most [`MAX_COMPLETIONS`] values.

use std::collections::HashMap;

use crate::{
    context::Context,
    records::Records,
    state::{State, StateMap},
};

/// The most values one answer carries (MCP's bound); the rest are counted in
/// [`Completions::total`].
pub const MAX_COMPLETIONS: usize = 100;

/// What a completion is asked.
#[derive(Clone, Copy, Debug)]
pub struct CompletionRequest<'a> {
    pub(crate) argument: &'a str,
    pub(crate) value: &'a str,
    pub(crate) arguments: &'a HashMap<String, String>,
    pub(crate) context: &'a Context,
    pub(crate) states: &'a StateMap,
    pub(crate) records: &'a Records,
}

impl<'a> CompletionRequest<'a> {
    /// The argument (or template variable) being completed.
    pub fn argument(&self) -> &'a str {
        self.argument
    }

    /// What the user typed so far.
    pub fn value(&self) -> &'a str {
        self.value
    }

    /// The other arguments the user already chose, by name.
    pub fn arguments(&self) -> &'a HashMap<String, String> {
        self.arguments
    }

    /// The host's trusted context for the request.
    pub fn context(&self) -> &'a Context {
        self.context
    }

    /// A shared value registered with [`Carmy::state`](crate::Carmy::state), for a completer
    /// that suggests from what the server holds (the ids of its products, say). `None` when no
    /// `T` is registered: a tool's `State<T>` is checked by `build()`, a completer asks when it
    /// runs.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        self.states.get::<T>()
    }

    /// The application's records, read-only, for a completer that suggests from them (the ids
    /// of the orders placed so far, say).
    pub fn records(&self) -> &'a Records {
        self.records
    }
}

/// Suggested values, most likely first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completions {
    values: Vec<String>,
    total: usize,
}

impl Completions {
    /// No suggestion.
    pub fn none() -> Self {
        Self::default()
    }

    /// These values, most likely first; only the first [`MAX_COMPLETIONS`] are kept, the rest
    /// counted.
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut values: Vec<String> = values.into_iter().map(Into::into).collect();
        let total = values.len();
        values.truncate(MAX_COMPLETIONS);
        Self { values, total }
    }

    /// The values of `candidates` that start with `typed`, ignoring case: the usual answer.
    pub fn starting_with<'c>(typed: &str, candidates: impl IntoIterator<Item = &'c str>) -> Self {
        let typed = typed.to_lowercase();
        Self::new(
            candidates
                .into_iter()
                .filter(|candidate| candidate.to_lowercase().starts_with(&typed)),
        )
    }

    /// The values kept.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// How many values there were before keeping [`MAX_COMPLETIONS`].
    pub fn total(&self) -> usize {
        self.total
    }

    /// Whether some values were not kept.
    pub fn has_more(&self) -> bool {
        self.total > self.values.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_a_hundred_values_are_kept_and_the_rest_counted() {
        let many = Completions::new((0..250).map(|n| format!("ord-{n}")));
        assert_eq!(many.values().len(), 100);
        assert_eq!((many.total(), many.has_more()), (250, true));
        let few = Completions::starting_with("SKU-0", ["sku-001", "sku-002", "mouse"]);
        assert_eq!(few.values(), ["sku-001", "sku-002"]);
        assert!(!few.has_more());
        assert!(Completions::none().values().is_empty());
    }
}
