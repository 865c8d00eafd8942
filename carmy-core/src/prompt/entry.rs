//! One prompt of the catalog: metadata with defaults resolved, its arguments as the input's
//! schema describes them, and the schema they are checked against.

use std::{fmt, sync::Arc, time::Duration};

use serde_json::{Map, Value};

use super::{PromptSpec, erased::ErasedPrompt};
use crate::{error::AgentError, excerpt::excerpt};

/// How much of a value a validation message may quote.
const MAX_PROBLEM_LEN: usize = 256;

/// One argument of a prompt: a field of its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptArgument {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) required: bool,
}

impl PromptArgument {
    /// The field's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The field's title, from its schema, if any.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The field's doc comment, if any.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Whether the field must be given (it is not an `Option`, and has no default).
    pub fn required(&self) -> bool {
        self.required
    }
}

/// One prompt of the catalog.
pub struct PromptEntry {
    pub(crate) spec: PromptSpec,
    pub(crate) timeout: Duration,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) input_schema: Arc<Value>,
    pub(crate) input_validator: jsonschema::Validator,
    pub(crate) prompt: Arc<dyn ErasedPrompt>,
    pub(crate) completes: &'static [&'static str],
}

impl PromptEntry {
    /// The unique name.
    pub fn name(&self) -> &'static str {
        self.spec.name()
    }

    /// The display name, if any.
    pub fn title(&self) -> Option<&'static str> {
        self.spec.title_text()
    }

    /// The description.
    pub fn description(&self) -> &'static str {
        self.spec.description_text()
    }

    /// The arguments, in the input's field order.
    pub fn arguments(&self) -> &[PromptArgument] {
        &self.arguments
    }

    /// The arguments whose values it can suggest.
    pub fn completes(&self) -> &'static [&'static str] {
        self.completes
    }

    /// The deadline of each render.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The schema the arguments are checked against.
    pub fn input_schema(&self) -> &Arc<Value> {
        &self.input_schema
    }

    /// The arguments as the object the input decodes from, checked: a missing required one,
    /// or one the prompt does not take, is `INVALID_ARGUMENTS` naming it.
    pub(crate) fn validate_arguments(
        &self,
        arguments: Map<String, Value>,
    ) -> Result<Value, AgentError> {
        if let Some(unknown) = arguments.keys().find(|name| {
            !self
                .arguments
                .iter()
                .any(|argument| &argument.name == *name)
        }) {
            let unknown = excerpt(unknown, MAX_PROBLEM_LEN);
            return Err(AgentError::invalid_arguments(
                format!("the prompt `{}` takes no argument `{unknown}`", self.name()),
                serde_json::json!({ "errors": [{
                    "path": format!("/{unknown}"),
                    "message": "not an argument of this prompt",
                }] }),
            ));
        }
        let arguments = Value::Object(arguments);
        if let Some(missing) = self
            .arguments
            .iter()
            .find(|argument| argument.required && arguments.get(&argument.name).is_none())
        {
            return Err(AgentError::invalid_arguments(
                format!(
                    "the prompt `{}` needs the argument `{}`",
                    self.name(),
                    missing.name
                ),
                serde_json::json!({ "errors": [{
                    "path": format!("/{}", missing.name),
                    "message": "missing",
                }] }),
            ));
        }
        match self.input_validator.validate(&arguments) {
            Ok(()) => Ok(arguments),
            Err(error) => Err(AgentError::invalid_arguments(
                format!(
                    "invalid arguments for the prompt `{}`: {} (at `{}`)",
                    self.name(),
                    excerpt(&error.to_string(), MAX_PROBLEM_LEN),
                    error.instance_path()
                ),
                serde_json::json!({ "errors": [{
                    "path": error.instance_path().to_string(),
                    "message": excerpt(&error.to_string(), MAX_PROBLEM_LEN),
                }] }),
            )),
        }
    }
}

impl fmt::Debug for PromptEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptEntry")
            .field("spec", &self.spec)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}
