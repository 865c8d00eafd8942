//! Registering resources, and checking them when the runtime is built.

use std::{collections::HashSet, sync::Arc, time::Duration};

use serde_json::Value;

use super::{
    Resource, ResourceEntry, ResourceSpec, UriTemplate,
    erased::{ErasedRead, ErasedResource},
};
use crate::{
    build_problem::BuildProblem,
    schema::{self, Direction, SchemaProfile, schema_for},
    state::Requirements,
};

/// A resource as registered, before `build()` checks it.
pub(crate) struct RegisteredResource {
    spec: ResourceSpec,
    requirements: Requirements,
    resource: Arc<dyn ErasedResource>,
    completes: &'static [&'static str],
    schema: fn(SchemaProfile) -> Value,
}

impl RegisteredResource {
    pub(crate) fn new<R: Resource>(resource: R) -> Self {
        let mut requirements = Requirements::default();
        R::requirements(&mut requirements);
        Self {
            spec: R::SPEC,
            requirements,
            resource: Arc::new(ErasedRead(resource)),
            completes: R::COMPLETES,
            schema: |profile| schema_for::<R::Input>(profile, Direction::Input),
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

/// Checks every resource, reporting problems into `problems`; the entries of those that pass.
pub(crate) fn build(
    registered: Vec<RegisteredResource>,
    profile: SchemaProfile,
    default_timeout: Duration,
    problems: &mut Vec<BuildProblem>,
) -> Vec<ResourceEntry> {
    let mut names = HashSet::new();
    let mut uris = HashSet::new();
    let mut entries = Vec::with_capacity(registered.len());
    for resource in registered {
        let name = resource.name();
        let uri = resource.spec.uri();
        if !names.insert(name) {
            problems.push(BuildProblem::DuplicateResourceName { name: name.into() });
        }
        if !uris.insert(uri) {
            problems.push(BuildProblem::DuplicateResourceUri { uri: uri.into() });
        }
        let template = match UriTemplate::parse(uri) {
            Ok(template) => template,
            Err(error) => {
                problems.push(BuildProblem::InvalidResource {
                    resource: name.into(),
                    reason: error.to_string(),
                });
                continue;
            }
        };
        let input_schema = (resource.schema)(profile);
        if let Some(other) = resource
            .completes
            .iter()
            .find(|variable| !template.variables().any(|known| known == **variable))
        {
            problems.push(BuildProblem::InvalidResource {
                resource: name.into(),
                reason: format!("it completes `{other}`, which is not a variable of `{template}`"),
            });
        }
        if let Err(reason) = variables_fit(&template, &input_schema) {
            problems.push(BuildProblem::InvalidResource {
                resource: name.into(),
                reason,
            });
            continue;
        }
        let input_validator = match schema::validator(&input_schema) {
            Ok(validator) => validator,
            Err(error) => {
                problems.push(BuildProblem::InvalidResource {
                    resource: name.into(),
                    reason: format!("its input has an invalid schema: {error}"),
                });
                continue;
            }
        };
        entries.push(ResourceEntry {
            timeout: resource.spec.timeout_override().unwrap_or(default_timeout),
            spec: resource.spec,
            template,
            input_schema: Arc::new(input_schema),
            input_validator,
            resource: resource.resource,
            completes: resource.completes,
        });
    }
    entries
}

/// The template's variables are exactly the input's properties, each a string (a URI binds
/// text), and every required property is a variable.
fn variables_fit(template: &UriTemplate, input: &Value) -> Result<(), String> {
    let properties = input
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for variable in template.variables() {
        match properties.get(variable) {
            None => {
                return Err(format!(
                    "`{{{variable}}}` in `{template}` is not a field of the resource's input"
                ));
            }
            Some(property) if property.get("type").is_some_and(|ty| ty != "string") => {
                return Err(format!(
                    "the field `{variable}` is bound from the URI, so it must be a string"
                ));
            }
            Some(_) => {}
        }
    }
    let required = input.get("required").and_then(Value::as_array);
    for field in required.into_iter().flatten().filter_map(Value::as_str) {
        if !template.variables().any(|variable| variable == field) {
            return Err(format!(
                "the input's required field `{field}` is not a variable of `{template}`"
            ));
        }
    }
    Ok(())
}
