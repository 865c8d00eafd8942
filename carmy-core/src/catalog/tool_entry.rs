//! One tool of the catalog: its metadata with defaults resolved, its published schemas and
//! the validators built from them.

use std::{fmt, sync::Arc, time::Duration};

use serde_json::Value;
use tokio::sync::Semaphore;

use crate::{
    effect::{Confirmation, Effect},
    erased::ErasedTool,
    error::AgentError,
    excerpt::excerpt,
    rate_buckets::ToolRateLimiter,
    rate_limit::RateLimit,
    schema,
    task::TaskSupport,
    tool::ToolSpec,
};

/// How much of a value a validation message may quote.
const MAX_PROBLEM_LEN: usize = 256;

/// One tool of the catalog: metadata with defaults resolved, published schemas, validators.
pub struct ToolEntry {
    pub(crate) spec: ToolSpec,
    /// Its own, or `Required` where the runtime's `require_confirmation` matches it.
    pub(crate) confirmation: Confirmation,
    pub(crate) timeout: Duration,
    pub(crate) input_schema: Arc<Value>,
    pub(crate) output_schema: Arc<Value>,
    pub(crate) input_validator: jsonschema::Validator,
    pub(crate) output_validator: jsonschema::Validator,
    /// Whether `schema::drop_optional_nulls` can change arguments / results; computed once.
    pub(crate) input_drops_nulls: bool,
    pub(crate) output_drops_nulls: bool,
    pub(crate) returns_content: bool,
    pub(crate) tool: Arc<dyn ErasedTool>,
    /// One permit for tools whose executions must not overlap.
    pub(crate) serial: Option<Arc<Semaphore>>,
    /// The tool's rate limit (its own, else the runtime's), and the buckets it fills.
    pub(crate) rate_limit: RateLimit,
    pub(crate) rate_limiter: Option<ToolRateLimiter>,
}

impl ToolEntry {
    /// The unique name.
    pub fn name(&self) -> &'static str {
        self.spec.name()
    }

    /// The display name, if any.
    pub fn title(&self) -> Option<&'static str> {
        self.spec.title_text()
    }

    /// The description (the doc comment, unless overridden).
    pub fn description(&self) -> &'static str {
        self.spec.description_text()
    }

    /// The declared effect.
    pub fn effect(&self) -> Effect {
        self.spec.effect()
    }

    /// Whether repeating a call has no further effect.
    pub fn idempotent(&self) -> bool {
        self.spec.is_idempotent()
    }

    /// Whether its effects are its record writes, committed with its outcome.
    pub fn transactional(&self) -> bool {
        self.spec.is_transactional()
    }

    /// Whether executions may overlap.
    pub fn parallel_safe(&self) -> bool {
        self.spec.is_parallel_safe()
    }

    /// Whether the host must grant `confirm:<name>`.
    pub fn confirmation(&self) -> Confirmation {
        self.confirmation
    }

    /// The deadline of each execution.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How often one principal may call it: its own limit, else the runtime's.
    pub fn rate_limit(&self) -> RateLimit {
        self.rate_limit
    }

    /// Whether calls may become tasks.
    pub fn task_support(&self) -> TaskSupport {
        self.spec.task_support()
    }

    /// How long a call that may become a task runs as a plain call first (zero: it is a task
    /// from the moment the tool starts).
    pub fn task_after(&self) -> Duration {
        self.spec.task_after_override().unwrap_or(Duration::ZERO)
    }

    /// The input schema, exactly as published and as used to validate arguments.
    pub fn input_schema(&self) -> &Arc<Value> {
        &self.input_schema
    }

    /// Whether the tool returns [`ToolContent`](crate::ToolContent) (text, images, audio,
    /// embedded resources) rather than JSON data; its output is then the content's JSON form,
    /// and it has no output schema to publish.
    pub fn returns_content(&self) -> bool {
        self.returns_content
    }

    /// The output schema, as published and as used to check results.
    pub fn output_schema(&self) -> &Arc<Value> {
        &self.output_schema
    }

    /// Whether the tool returns JSON objects (MCP's `structuredContent` requires one).
    pub fn has_object_output(&self) -> bool {
        schema::is_object_schema(&self.output_schema)
    }

    /// Checks arguments against the input schema: `Ok` with the arguments to decode (optional
    /// fields sent as `null` removed), or `INVALID_ARGUMENTS` naming each bad field by its JSON
    /// pointer.
    pub fn validate_arguments(
        &self,
        mut arguments: Value,
        max_depth: usize,
    ) -> Result<Value, AgentError> {
        if arguments.is_null() {
            // MCP clients omit `arguments` for tools without parameters.
            arguments = Value::Object(Default::default());
        }
        if exceeds_depth(&arguments, max_depth) {
            return Err(AgentError::invalid_arguments(
                format!("arguments are nested deeper than {max_depth} levels"),
                serde_json::json!({ "max_depth": max_depth }),
            ));
        }
        if self.input_drops_nulls {
            schema::drop_optional_nulls(&self.input_schema, &mut arguments);
        }
        if self.input_validator.is_valid(&arguments) {
            return Ok(arguments);
        }
        let problems: Vec<Value> = self
            .input_validator
            .iter_errors(&arguments)
            .take(8)
            .map(|error| {
                serde_json::json!({
                    "path": excerpt(&error.instance_path().to_string(), MAX_PROBLEM_LEN),
                    // The validator quotes the bad value, which may be megabytes long.
                    "message": excerpt(&error.to_string(), MAX_PROBLEM_LEN),
                })
            })
            .collect();
        let first = &problems[0];
        let path = first["path"].as_str().unwrap_or_default();
        let message = format!(
            "invalid arguments for `{}`: {} (at `{}`)",
            self.name(),
            first["message"].as_str().unwrap_or_default(),
            if path.is_empty() { "/" } else { path },
        );
        Err(AgentError::invalid_arguments(
            message,
            serde_json::json!({ "errors": problems }),
        ))
    }

    /// Checks a result against the output schema, after dropping `null` members the schema
    /// spells as absent.
    pub(crate) fn validate_output(&self, output: &mut Value) -> Result<(), AgentError> {
        if self.output_drops_nulls {
            schema::drop_optional_nulls(&self.output_schema, output);
        }
        match self.output_validator.validate(output) {
            Ok(()) => Ok(()),
            Err(error) => Err(AgentError::invalid_output(format!(
                "the tool's output does not match its output schema: {} (at `{}`)",
                excerpt(&error.to_string(), MAX_PROBLEM_LEN),
                excerpt(&error.instance_path().to_string(), MAX_PROBLEM_LEN)
            ))),
        }
    }
}

impl fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry")
            .field("spec", &self.spec)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Iterative, so hostile nesting cannot overflow the stack here.
fn exceeds_depth(value: &Value, max_depth: usize) -> bool {
    let mut stack = vec![(value, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        let is_container = matches!(value, Value::Array(_) | Value::Object(_));
        if is_container && depth + 1 > max_depth {
            return true;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|child| (child, depth + 1))),
            Value::Object(members) => {
                stack.extend(members.values().map(|child| (child, depth + 1)));
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn depth_is_measured_in_containers() {
        assert!(!exceeds_depth(&json!({ "a": [1] }), 2));
        assert!(exceeds_depth(&json!({ "a": [[1]] }), 2));
        assert!(!exceeds_depth(&json!(1), 0));
        let mut deep = json!(0);
        for _ in 0..10_000 {
            deep = Value::Array(vec![deep]);
        }
        assert!(exceeds_depth(&deep, 64));
        // Dropping a 10,000-deep Value recurses; take it apart level by level instead.
        while let Value::Array(mut items) = deep {
            deep = items.pop().unwrap_or(Value::Null);
        }
    }
}
