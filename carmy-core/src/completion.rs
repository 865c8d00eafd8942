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
    uri_template::UriTemplate,
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
    /// The values; every one given until the runtime keeps what it answers with.
    values: Vec<String>,
    total: usize,
    /// The URI template whose resources the values name, if they do.
    naming: Option<&'static str>,
}

impl Completions {
    /// No suggestion.
    pub fn none() -> Self {
        Self::default()
    }

    /// These values, most likely first; only the first [`MAX_COMPLETIONS`] are kept, the rest
    /// counted.
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        Self {
            total: values.len(),
            values,
            naming: None,
        }
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

    /// Says that the values name resources: each is what the URI template `template` takes
    /// for the argument being completed (its other variables are the other arguments the user
    /// chose). The runtime then suggests only the values whose resource the caller may read
    /// ([`Access`](crate::Access)), and counts only those: a suggestion shows that what it
    /// names exists.
    ///
    /// ```
    /// use carmy_core::Completions;
    ///
    /// let ids = ["ord-1001", "ord-1002"];
    /// let completions = Completions::starting_with("ord-", ids).naming("shop://orders/{order_id}");
    /// assert_eq!(completions.values().len(), 2);
    /// ```
    #[must_use]
    pub fn naming(mut self, template: &'static str) -> Self {
        self.naming = Some(template);
        self
    }

    /// The values kept.
    pub fn values(&self) -> &[String] {
        &self.values[..self.values.len().min(MAX_COMPLETIONS)]
    }

    /// How many values there were before keeping [`MAX_COMPLETIONS`].
    pub fn total(&self) -> usize {
        self.total
    }

    /// Whether some values were not kept.
    pub fn has_more(&self) -> bool {
        self.total > self.values().len()
    }

    /// Keeps what the runtime answers with: when `readable` is given and the values name
    /// resources, only those whose URI it accepts, all of them counted; at most
    /// [`MAX_COMPLETIONS`] of them. `argument` is the argument completed, `arguments` the
    /// others the user chose.
    pub(crate) fn keep(
        &mut self,
        argument: &str,
        arguments: &HashMap<String, String>,
        readable: Option<impl Fn(&str) -> bool>,
    ) {
        if let (Some(template), Some(readable)) = (self.naming, readable) {
            match UriTemplate::parse(template) {
                Ok(template) => self.values.retain(|value| {
                    let chosen: Vec<(&str, &str)> = std::iter::once((argument, value.as_str()))
                        .chain(
                            arguments
                                .iter()
                                .map(|(name, value)| (name.as_str(), value.as_str())),
                        )
                        .collect();
                    template.expand(&chosen).is_some_and(|uri| readable(&uri))
                }),
                Err(error) => {
                    // What the values name cannot be told: none is suggested rather than any.
                    tracing::warn!(%error, "completions name resources by a template that does not parse");
                    self.values.clear();
                }
            }
            self.total = self.values.len();
        }
        self.values.truncate(MAX_COMPLETIONS);
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
