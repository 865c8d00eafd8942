//! `completion/complete`: an argument of a prompt or a variable of a resource template, and
//! what the user typed.

use std::collections::HashMap;

use super::{Operation, Request, sealed::Sealed};

/// What a completion is for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionTarget {
    /// The prompt of this name.
    Prompt(String),
    /// The resource whose URI template is this.
    Resource(String),
}

impl CompletionTarget {
    /// The prompt's name, or the template.
    pub fn name(&self) -> &str {
        match self {
            CompletionTarget::Prompt(name) | CompletionTarget::Resource(name) => name,
        }
    }
}

/// A completion: an argument of a target, what the user typed, and the other arguments
/// already chosen. Built by [`Request::complete`].
#[derive(Debug)]
pub struct Complete {
    pub(in crate::runtime) target: CompletionTarget,
    pub(in crate::runtime) argument: String,
    pub(in crate::runtime) value: String,
    pub(in crate::runtime) arguments: HashMap<String, String>,
}

impl Sealed for Complete {}

impl Operation for Complete {
    const METHOD: &'static str = "completion/complete";

    fn target(&self) -> &str {
        self.target.name()
    }
}

impl Request<Complete> {
    /// Values for `argument` of `target`, the user having typed `value`.
    ///
    /// ```
    /// use carmy_core::{CompletionTarget, Request};
    ///
    /// let request = Request::complete(CompletionTarget::Prompt("review_order".into()), "order_id", "ord-1");
    /// assert_eq!(request.target(), "review_order");
    /// ```
    pub fn complete(
        target: CompletionTarget,
        argument: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self::of(Complete {
            target,
            argument: argument.into(),
            value: value.into(),
            arguments: HashMap::new(),
        })
    }

    /// The other arguments the user already chose.
    pub fn arguments(mut self, arguments: HashMap<String, String>) -> Self {
        self.operation.arguments = arguments;
        self
    }
}
