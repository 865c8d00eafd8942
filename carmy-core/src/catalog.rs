//! The validated catalog: every tool with its resolved policy and its schemas, every resource
//! and every prompt, built once.

use std::{collections::HashMap, fmt, sync::Arc, time::Duration};

use serde_json::Value;
use tokio::sync::Semaphore;

use crate::{
    effect::{Confirmation, Effect},
    erased::ErasedTool,
    error::AgentError,
    excerpt::excerpt,
    prompt::PromptEntry,
    rate_buckets::ToolRateLimiter,
    rate_limit::RateLimit,
    resource::{ChangeFeed, MAX_URI_LEN, ProviderEntry, ResourceEntry, watch::Hub},
    schema,
    task::TaskSupport,
    tool::ToolSpec,
};

pub use crate::limits::MAX_TOOL_NAME_LEN;

/// How much of a value a validation message may quote.
const MAX_PROBLEM_LEN: usize = 256;

/// Whether `name` is a valid MCP tool name: 1 to 128 characters of `A-Z a-z 0-9 _ - .`.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The tools, resources, resource providers and prompts of a runtime, in registration order.
pub struct Catalog {
    entries: Vec<ToolEntry>,
    by_name: HashMap<&'static str, usize>,
    resources: Vec<ResourceEntry>,
    /// Resources at a fixed URI, by URI.
    fixed: HashMap<&'static str, usize>,
    providers: Vec<ProviderEntry>,
    /// Who listens to the providers' changes. Built with the providers, whose watches it starts
    /// and stops, so it lives beside them.
    pub(crate) watchers: Arc<Hub>,
    prompts: Vec<PromptEntry>,
}

impl Catalog {
    pub(crate) fn new(
        entries: Vec<ToolEntry>,
        resources: Vec<ResourceEntry>,
        providers: Vec<ProviderEntry>,
        prompts: Vec<PromptEntry>,
        reports_own_changes: bool,
        feed: Option<Arc<dyn ChangeFeed>>,
    ) -> Self {
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(index, entry)| (entry.name(), index))
            .collect();
        let fixed = resources
            .iter()
            .enumerate()
            .filter(|(_, resource)| !resource.is_template())
            .map(|(index, resource)| (resource.uri(), index))
            .collect();
        let watchers = Hub::new(
            providers
                .iter()
                .filter(|entry| entry.reports_changes())
                .map(|entry| Arc::clone(&entry.provider))
                .collect(),
            reports_own_changes,
            feed,
        );
        Self {
            entries,
            by_name,
            resources,
            fixed,
            providers,
            watchers,
            prompts,
        }
    }

    /// Every prompt, in registration order.
    pub fn prompts(&self) -> std::slice::Iter<'_, PromptEntry> {
        self.prompts.iter()
    }

    /// The prompt named exactly `name`.
    pub fn prompt(&self, name: &str) -> Option<&PromptEntry> {
        // Prompts are few: a scan beats a map's hashing and keeps the catalog small.
        self.prompts.iter().find(|prompt| prompt.name() == name)
    }

    /// Every resource, fixed or templated, in registration order.
    pub fn resources(&self) -> std::slice::Iter<'_, ResourceEntry> {
        self.resources.iter()
    }

    /// The resource `uri` names, with the values its template's variables bound: a fixed URI
    /// first, then the templates in registration order. A URI longer than
    /// [`MAX_URI_LEN`](crate::MAX_URI_LEN) names none.
    pub fn resolve_resource(
        &self,
        uri: &str,
    ) -> Option<(&ResourceEntry, Vec<(&'static str, String)>)> {
        if uri.len() > MAX_URI_LEN {
            return None;
        }
        if let Some(&index) = self.fixed.get(uri) {
            return Some((&self.resources[index], Vec::new()));
        }
        self.resources
            .iter()
            .filter(|resource| resource.is_template())
            .find_map(|resource| Some((resource, resource.template().matches(uri)?)))
    }

    /// Every resource provider, in registration order.
    pub fn providers(&self) -> std::slice::Iter<'_, ProviderEntry> {
        self.providers.iter()
    }

    /// The provider that answers `uri`: the first, in registration order, that claims it. Asked
    /// only for URIs [`resolve_resource`](Self::resolve_resource) does not match (the catalog's
    /// own resources come first). A URI longer than [`MAX_URI_LEN`](crate::MAX_URI_LEN) is
    /// nobody's.
    pub fn resolve_provider(&self, uri: &str) -> Option<&ProviderEntry> {
        if uri.len() > MAX_URI_LEN {
            return None;
        }
        self.providers.iter().find(|provider| provider.claims(uri))
    }

    /// Whether changes are reported, by the application or a provider (adapters offer
    /// subscriptions then).
    pub fn reports_resource_changes(&self) -> bool {
        self.watchers.reports_changes()
    }

    /// The tool named exactly `name` (names are case-sensitive).
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.by_name.get(name).map(|&index| &self.entries[index])
    }

    /// Every tool, in registration order.
    pub fn iter(&self) -> std::slice::Iter<'_, ToolEntry> {
        self.entries.iter()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the catalog is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'a> IntoIterator for &'a Catalog {
    type Item = &'a ToolEntry;
    type IntoIter = std::slice::Iter<'a, ToolEntry>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(ToolEntry::name))
            .finish()
    }
}

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
    fn tool_names_follow_mcp() {
        assert!(is_valid_tool_name("search_products"));
        assert!(is_valid_tool_name("shop.v2-search"));
        assert!(is_valid_tool_name(&"a".repeat(128)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name(&"a".repeat(129)));
        assert!(!is_valid_tool_name("search products"));
        assert!(!is_valid_tool_name("séarch"));
        assert!(!is_valid_tool_name("a/b"));
    }

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
