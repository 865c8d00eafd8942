//! Registering prompts, and checking them when the runtime is built.

use std::{collections::HashSet, sync::Arc, time::Duration};

use serde_json::Value;

use super::{
    Prompt, PromptArgument, PromptEntry, PromptSpec,
    erased::{ErasedPrompt, ErasedRender},
};
use crate::{
    build_problem::BuildProblem,
    schema::{self, Direction, SchemaProfile, schema_for},
    state::Requirements,
};

/// A prompt as registered, before `build()` checks it.
pub(crate) struct RegisteredPrompt {
    spec: PromptSpec,
    requirements: Requirements,
    prompt: Arc<dyn ErasedPrompt>,
    completes: &'static [&'static str],
    schema: fn(SchemaProfile) -> Value,
}

impl RegisteredPrompt {
    pub(crate) fn new<P: Prompt>(prompt: P) -> Self {
        let mut requirements = Requirements::default();
        P::requirements(&mut requirements);
        Self {
            spec: P::SPEC,
            requirements,
            prompt: Arc::new(ErasedRender(prompt)),
            completes: P::COMPLETES,
            schema: |profile| schema_for::<P::Input>(profile, Direction::Input),
        }
    }

    pub(crate) fn name(&self) -> &'static str {
        self.spec.name()
    }

    /// The `State<T>` it takes, for `build()` to find.
    pub(crate) fn requirements(&self) -> &Requirements {
        &self.requirements
    }
}

/// Checks every prompt, reporting problems into `problems`; the entries of those that pass.
pub(crate) fn build(
    registered: Vec<RegisteredPrompt>,
    profile: SchemaProfile,
    default_timeout: Duration,
    problems: &mut Vec<BuildProblem>,
) -> Vec<PromptEntry> {
    let mut names = HashSet::new();
    let mut entries = Vec::with_capacity(registered.len());
    for prompt in registered {
        let name = prompt.spec.name();
        if !names.insert(name) {
            problems.push(BuildProblem::DuplicatePromptName { name: name.into() });
        }
        let input_schema = (prompt.schema)(profile);
        let arguments = match arguments_of(&input_schema) {
            Ok(arguments) => arguments,
            Err(reason) => {
                problems.push(BuildProblem::InvalidPrompt {
                    prompt: name.into(),
                    reason,
                });
                continue;
            }
        };
        if let Some(other) = prompt
            .completes
            .iter()
            .find(|field| !arguments.iter().any(|argument| argument.name == **field))
        {
            problems.push(BuildProblem::InvalidPrompt {
                prompt: name.into(),
                reason: format!("it completes `{other}`, which is not one of its arguments"),
            });
        }
        let input_validator = match schema::validator(&input_schema) {
            Ok(validator) => validator,
            Err(error) => {
                problems.push(BuildProblem::InvalidPrompt {
                    prompt: name.into(),
                    reason: format!("its input has an invalid schema: {error}"),
                });
                continue;
            }
        };
        entries.push(PromptEntry {
            timeout: prompt.spec.timeout_override().unwrap_or(default_timeout),
            spec: prompt.spec,
            arguments,
            input_schema: Arc::new(input_schema),
            input_validator,
            prompt: prompt.prompt,
            completes: prompt.completes,
        });
    }
    entries
}

/// The input's fields as arguments: each a string (MCP passes prompt arguments as strings),
/// described by its doc comment, required when the schema requires it. Required ones come
/// first, in the order the input declares them (the schema's `required` keeps it), then the
/// optional ones by name (a schema's properties are a map, and keep no order).
fn arguments_of(input: &Value) -> Result<Vec<PromptArgument>, String> {
    let required: Vec<&str> = input
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let Some(properties) = input.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut fields: Vec<(&String, &Value)> = properties.iter().collect();
    fields.sort_by_key(|(name, _)| {
        let rank = required.iter().position(|field| field == name);
        (rank.is_none(), rank, (*name).clone())
    });
    fields
        .into_iter()
        .map(|(name, property)| {
            if property.get("type").is_some_and(|ty| ty != "string") {
                return Err(format!(
                    "the field `{name}` is an argument, and MCP passes prompt arguments as strings: \
                     make it a `String` (or an `Option<String>`)"
                ));
            }
            let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_owned);
            Ok(PromptArgument {
                name: name.clone(),
                title: text("title"),
                description: text("description"),
                required: required.contains(&name.as_str()),
            })
        })
        .collect()
}
