//! One resource of the catalog: metadata with defaults resolved, its parsed template, and the
//! schema its variables are checked against.

use std::{fmt, sync::Arc, time::Duration};

use serde_json::{Map, Value};

use super::{ResourceSpec, UriTemplate, erased::ErasedResource};
use crate::{error::AgentError, excerpt::excerpt};

/// How much of a value a validation message may quote.
const MAX_PROBLEM_LEN: usize = 256;

/// One resource of the catalog.
pub struct ResourceEntry {
    pub(crate) spec: ResourceSpec,
    pub(crate) template: UriTemplate,
    pub(crate) timeout: Duration,
    pub(crate) input_schema: Arc<Value>,
    pub(crate) input_validator: jsonschema::Validator,
    pub(crate) resource: Arc<dyn ErasedResource>,
    pub(crate) completes: &'static [&'static str],
}

impl ResourceEntry {
    /// The unique name.
    pub fn name(&self) -> &'static str {
        self.spec.name()
    }

    /// The URI, or the URI template, as written.
    pub fn uri(&self) -> &'static str {
        self.spec.uri()
    }

    /// The parsed template (a fixed URI is a template without variables).
    pub fn template(&self) -> &UriTemplate {
        &self.template
    }

    /// Whether its URI has variables (listed among templates, not among resources).
    pub fn is_template(&self) -> bool {
        !self.template.is_fixed()
    }

    /// The display name, if any.
    pub fn title(&self) -> Option<&'static str> {
        self.spec.title_text()
    }

    /// The description.
    pub fn description(&self) -> &'static str {
        self.spec.description_text()
    }

    /// The MIME type, if declared.
    pub fn mime_type(&self) -> Option<&'static str> {
        self.spec.mime_type_of()
    }

    /// How long a client may keep what it read.
    pub fn fresh_for(&self) -> Duration {
        self.spec.freshness()
    }

    /// The deadline of each read.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The variables whose values it can suggest.
    pub fn completes(&self) -> &'static [&'static str] {
        self.completes
    }

    /// The schema the URI's variables are checked against.
    pub fn input_schema(&self) -> &Arc<Value> {
        &self.input_schema
    }

    /// The variables a URI bound, as the object its input decodes from, checked against the
    /// input schema.
    pub(crate) fn validate_variables(
        &self,
        bound: Vec<(&'static str, String)>,
    ) -> Result<Value, AgentError> {
        let variables = Value::Object(
            bound
                .into_iter()
                .map(|(name, value)| (name.to_owned(), Value::String(value)))
                .collect::<Map<String, Value>>(),
        );
        match self.input_validator.validate(&variables) {
            Ok(()) => Ok(variables),
            Err(error) => Err(AgentError::invalid_arguments(
                format!(
                    "the URI does not fit `{}`: {} (at `{}`)",
                    self.uri(),
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

impl fmt::Debug for ResourceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEntry")
            .field("spec", &self.spec)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
