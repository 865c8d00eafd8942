//! `BuildError` and `BuildProblem`: everything `Carmy::build` can find wrong with a catalog.

use std::fmt;

/// `tools `a` and `b`, resource `c` take` or `tool `a` takes`: who takes a missing state.
fn takers(tools: &[String], resources: &[String], prompts: &[String]) -> String {
    let groups: Vec<String> = [
        ("tool", tools),
        ("resource", resources),
        ("prompt", prompts),
    ]
    .into_iter()
    .filter(|(_, names)| !names.is_empty())
    .map(|(kind, names)| {
        let plural = if names.len() > 1 { "s" } else { "" };
        let names: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
        format!("{kind}{plural} {}", and_list(&names))
    })
    .collect();
    let one = tools.len() + resources.len() + prompts.len() == 1;
    format!(
        "{} {}",
        and_list(&groups),
        if one { "takes" } else { "take" }
    )
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Everything wrong with a catalog, found by [`Carmy::build`](crate::Carmy::build).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    pub(crate) problems: Vec<BuildProblem>,
}

impl BuildError {
    /// Each problem found.
    pub fn problems(&self) -> &[BuildProblem] {
        &self.problems
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problems[..] {
            [problem] => write!(f, "cannot build the catalog: {problem}"),
            problems => {
                // One line each: several problems in one line read as none.
                f.write_str("cannot build the catalog:")?;
                for problem in problems {
                    write!(f, "\n- {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// One thing wrong with a catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildProblem {
    /// Two tools share a name.
    #[error("two tools are named `{name}`")]
    DuplicateName {
        /// The shared name.
        name: String,
    },
    /// Two names differ only by case, which confuses models and people alike.
    #[error("tool names `{first}` and `{second}` differ only by case")]
    NamesDifferOnlyByCase {
        /// The first registered.
        first: String,
        /// The second registered.
        second: String,
    },
    /// A name outside MCP's alphabet or length.
    #[error("invalid tool name `{name}`: use 1 to 128 characters of A-Z a-z 0-9 _ - .")]
    InvalidName {
        /// The bad name.
        name: String,
    },
    /// Tools, resources or prompts take `State<T>`, and no `T` was registered.
    #[error(
        "{} `State<{type_name}>`, but no `{type_name}` is registered: add `.state(...)` with one to the builder",
        takers(tools, resources, prompts)
    )]
    MissingState {
        /// The missing type.
        type_name: String,
        /// The tools that take it, in the order registered.
        tools: Vec<String>,
        /// The resources that take it.
        resources: Vec<String>,
        /// The prompts that take it.
        prompts: Vec<String>,
    },
    /// A tool whose input's schema is not an object's: MCP passes arguments as one object.
    #[error(
        "tool `{tool}` takes `{input_type}` as its input, whose schema has {stated}, but MCP passes a tool's arguments as one JSON object: take a struct whose named fields are the arguments, e.g. `struct Input {{ text: String }}` deriving `Deserialize` and `JsonSchema` (`serde_json::Map<String, Value>` for any object, no input parameter for none)"
    )]
    InputNotObject {
        /// The tool.
        tool: String,
        /// The input's Rust type.
        input_type: String,
        /// What the schema says at its root instead of `"type": "object"`.
        stated: String,
    },
    /// A schema that does not compile as JSON Schema.
    #[error("tool `{tool}` has an invalid schema: {message}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What the validator said.
        message: String,
    },
    /// A zero deadline would fail every call.
    #[error("tool `{tool}` has a zero timeout")]
    ZeroTimeout {
        /// The tool.
        tool: String,
    },
    /// Only a tool that writes can commit its writes with its outcome.
    #[error(
        "tool `{tool}` is transactional but its effect is `{effect}`: only `write` and `destructive` tools commit records (an `external_write` tool's effects are outside the store)"
    )]
    TransactionalEffect {
        /// The tool.
        tool: String,
        /// Its effect.
        effect: &'static str,
    },
    /// A transactional tool needs a store that keeps records.
    #[error(
        "tool `{tool}` is transactional, but the idempotency store keeps no records: give the builder one with `.store(...)`"
    )]
    TransactionalWithoutRecords {
        /// The tool.
        tool: String,
    },
    /// `task_after` on a tool whose calls never become tasks.
    #[error(
        "tool `{tool}` sets `task_after` but never runs as a task: declare `task` as `optional` or `required`"
    )]
    TaskAfterWithoutTasks {
        /// The tool.
        tool: String,
    },
    /// `max_concurrent_executions` of 0 would refuse every call.
    #[error("max_concurrent_executions must be at least 1")]
    ZeroConcurrency,
    /// Two resources share a name.
    #[error("two resources are named `{name}`")]
    DuplicateResourceName {
        /// The shared name.
        name: String,
    },
    /// Two resources share a URI or URI template.
    #[error("two resources are at `{uri}`")]
    DuplicateResourceUri {
        /// The shared URI.
        uri: String,
    },
    /// Two prompts share a name.
    #[error("two prompts are named `{name}`")]
    DuplicatePromptName {
        /// The shared name.
        name: String,
    },
    /// A prompt whose input cannot be its arguments.
    #[error("prompt `{prompt}`: {reason}")]
    InvalidPrompt {
        /// The prompt.
        prompt: String,
        /// What is wrong.
        reason: String,
    },
    /// A resource whose URI template or input cannot work.
    #[error("resource `{resource}`: {reason}")]
    InvalidResource {
        /// The resource.
        resource: String,
        /// What is wrong.
        reason: String,
    },
}
