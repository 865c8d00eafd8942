//! `Carmy::build`: every check of what was registered, all problems reported at once, then the
//! runtime assembled from the checked entries and the stores (in memory unless replaced).

use std::{any::TypeId, collections::HashMap, sync::Arc};

use tokio::sync::Semaphore;

use super::Carmy;
use crate::{
    build_problem::{BuildError, BuildProblem},
    catalog::{Catalog, ToolEntry, is_valid_tool_name},
    effect::{Confirmation, Effect},
    idempotency::DynStore,
    memory_store::MemoryStore,
    prompt,
    rate_buckets::ToolRateLimiter,
    rate_limit_store::RateLimits,
    records::DynRecordStore,
    redemption::{MemoryRedemptionStore, Redemptions},
    resource::{self, ProviderEntry},
    runtime::{Runtime, Stores},
    schema,
    task::MemoryTaskStore,
};

impl Carmy {
    /// Validates everything and builds the runtime; every problem found is reported at once.
    pub fn build(self) -> Result<Runtime, BuildError> {
        let mut problems = self.missing_states();
        let mut seen: HashMap<String, &'static str> = HashMap::new();
        for registered in &self.tools {
            let name = registered.spec.name();
            if !is_valid_tool_name(name) {
                problems.push(BuildProblem::InvalidName { name: name.into() });
            }
            match seen.insert(name.to_ascii_lowercase(), name) {
                Some(other) if other == name => {
                    problems.push(BuildProblem::DuplicateName { name: name.into() });
                }
                Some(other) => problems.push(BuildProblem::NamesDifferOnlyByCase {
                    first: other.into(),
                    second: name.into(),
                }),
                None => {}
            }
            if registered
                .spec
                .timeout_override()
                .is_some_and(|t| t.is_zero())
            {
                problems.push(BuildProblem::ZeroTimeout { tool: name.into() });
            }
            if registered.spec.is_transactional() {
                let effect = registered.spec.effect();
                if !matches!(effect, Effect::Write | Effect::Destructive) {
                    problems.push(BuildProblem::TransactionalEffect {
                        tool: name.into(),
                        effect: effect.as_str(),
                    });
                }
                if self.store.is_some() && self.records.is_none() {
                    problems.push(BuildProblem::TransactionalWithoutRecords { tool: name.into() });
                }
            }
            if registered.spec.task_after_override().is_some()
                && !registered.spec.task_support().allows_tasks()
            {
                problems.push(BuildProblem::TaskAfterWithoutTasks { tool: name.into() });
            }
        }
        if self.limits.max_concurrent_executions == 0 {
            problems.push(BuildProblem::ZeroConcurrency);
        }

        let mut entries = Vec::with_capacity(self.tools.len());
        for registered in self.tools {
            let name = registered.spec.name();
            let (input_schema, output_schema) = (registered.schemas)(self.profile);
            if !schema::is_object_schema(&input_schema) {
                problems.push(BuildProblem::InputNotObject {
                    tool: name.into(),
                    input_type: registered.input_type.into(),
                    stated: schema::stated_type(&input_schema),
                });
                continue;
            }
            let validators = (
                schema::validator(&input_schema),
                schema::validator(&output_schema),
            );
            let (input_validator, output_validator) = match validators {
                (Ok(input), Ok(output)) => (input, output),
                (input, output) => {
                    for error in [input.err(), output.err()].into_iter().flatten() {
                        problems.push(BuildProblem::InvalidSchema {
                            tool: name.into(),
                            message: error.to_string(),
                        });
                    }
                    continue;
                }
            };
            let rate_limit = registered
                .spec
                .rate_limit_override()
                .unwrap_or(self.rate_limit);
            let confirm = self
                .confirmed
                .iter()
                .any(|rules| rules.allows_tool(name, registered.spec.effect()));
            entries.push(ToolEntry {
                confirmation: if confirm {
                    Confirmation::Required
                } else {
                    registered.spec.confirmation_mode()
                },
                timeout: registered
                    .spec
                    .timeout_override()
                    .unwrap_or(self.limits.default_timeout),
                serial: (!registered.spec.is_parallel_safe()).then(|| Arc::new(Semaphore::new(1))),
                rate_limit,
                rate_limiter: ToolRateLimiter::new(rate_limit),
                spec: registered.spec,
                input_drops_nulls: schema::may_drop_nulls(&input_schema),
                output_drops_nulls: schema::may_drop_nulls(&output_schema),
                input_schema: Arc::new(input_schema),
                output_schema: Arc::new(output_schema),
                input_validator,
                output_validator,
                returns_content: registered.returns_content,
                tool: registered.tool,
            });
        }

        let resources = resource::register::build(
            self.resources,
            self.profile,
            self.limits.default_timeout,
            &mut problems,
        );

        // A provider's name is what its reads are recorded under: unique among resources.
        let mut names: std::collections::HashSet<&str> =
            resources.iter().map(|resource| resource.name()).collect();
        let providers = self
            .providers
            .into_iter()
            .map(|provider| {
                if !names.insert(provider.name()) {
                    problems.push(BuildProblem::DuplicateResourceName {
                        name: provider.name().into(),
                    });
                }
                ProviderEntry {
                    timeout: provider.timeout().unwrap_or(self.limits.default_timeout),
                    provider,
                }
            })
            .collect();

        let prompts = prompt::register::build(
            self.prompts,
            self.profile,
            self.limits.default_timeout,
            &mut problems,
        );

        if !problems.is_empty() {
            return Err(BuildError { problems });
        }
        let (store, records) = match self.store {
            Some(store) => (store, self.records),
            None => {
                let memory = Arc::new(MemoryStore::default());
                let records = Arc::clone(&memory) as Arc<dyn DynRecordStore>;
                (memory as Arc<dyn DynStore>, Some(records))
            }
        };
        let task_store = self
            .task_store
            .unwrap_or_else(|| Arc::new(MemoryTaskStore::default()));
        let redemptions = self
            .redemption_store
            .unwrap_or_else(|| Arc::new(MemoryRedemptionStore::default()));
        Ok(Runtime::new(
            Catalog::new(
                entries,
                resources,
                providers,
                prompts,
                self.reports_resource_changes,
                self.change_feed,
            ),
            Arc::new(self.states),
            Stores {
                store,
                records,
                task_store,
                redemptions: Redemptions::new(redemptions),
                rate_limits: self
                    .rate_limit_store
                    .map_or_else(RateLimits::default, RateLimits::shared),
            },
            self.admissions,
            self.middleware,
            self.limits,
        ))
    }
}

impl Carmy {
    /// One problem for each `State<T>` taken and not registered, naming everything that takes
    /// it, in the order registered.
    fn missing_states(&self) -> Vec<BuildProblem> {
        let takers = self
            .tools
            .iter()
            .map(|tool| (Taker::Tool, tool.spec.name(), &tool.requirements))
            .chain(
                self.resources
                    .iter()
                    .map(|resource| (Taker::Resource, resource.name(), resource.requirements())),
            )
            .chain(
                self.prompts
                    .iter()
                    .map(|prompt| (Taker::Prompt, prompt.name(), prompt.requirements())),
            );
        // Each missing type, with who takes it by kind, in the order first taken.
        let mut missing: Vec<(TypeId, &'static str, [Vec<String>; 3])> = Vec::new();
        for (taker, name, requirements) in takers {
            for state in &requirements.states {
                if self.states.contains(state.type_id) {
                    continue;
                }
                let at = match missing.iter().position(|(id, ..)| *id == state.type_id) {
                    Some(at) => at,
                    None => {
                        missing.push((state.type_id, state.type_name, Default::default()));
                        missing.len() - 1
                    }
                };
                let names = &mut missing[at].2[taker as usize];
                if !names.iter().any(|known| known == name) {
                    names.push(name.into());
                }
            }
        }
        missing
            .into_iter()
            .map(
                |(_, type_name, [tools, resources, prompts])| BuildProblem::MissingState {
                    type_name: type_name.into(),
                    tools,
                    resources,
                    prompts,
                },
            )
            .collect()
    }
}

/// What takes a `State<T>`; its discriminant indexes the names of each kind.
#[derive(Clone, Copy)]
enum Taker {
    Tool = 0,
    Resource = 1,
    Prompt = 2,
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;

    use serde_json::Value;

    use super::*;
    use crate::{
        error::AgentError,
        prompt::{Prompt, PromptSpec},
        resource::{Resource, ResourceSpec},
        schema::SchemaProfile,
        state::{Requirements, State},
        tool::{Invocation, NoInput, Tool, ToolSpec},
    };

    struct Db;

    /// A tool, a resource and a prompt that each take `State<Db>`.
    struct Search;
    impl Tool for Search {
        type Input = NoInput;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("search", Effect::Read);
        fn requirements(requirements: &mut Requirements) {
            requirements.state::<Db>();
        }
        async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }

    struct Count;
    impl Tool for Count {
        type Input = NoInput;
        type Output = u32;
        const SPEC: ToolSpec = ToolSpec::new("count", Effect::Read);
        fn requirements(requirements: &mut Requirements) {
            requirements.state::<Db>();
            requirements.state::<u8>();
        }
        async fn run(&self, _: NoInput, _: Invocation) -> Result<u32, AgentError> {
            Ok(0)
        }
    }

    struct Catalog;
    impl Resource for Catalog {
        type Input = NoInput;
        type Output = String;
        const SPEC: ResourceSpec = ResourceSpec::new("catalog", "shop://catalog");
        fn requirements(requirements: &mut Requirements) {
            requirements.state::<Db>();
        }
        async fn read(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
            Ok(String::new())
        }
    }

    struct Help;
    impl Prompt for Help {
        type Input = NoInput;
        type Output = String;
        const SPEC: PromptSpec = PromptSpec::new("help");
        fn requirements(requirements: &mut Requirements) {
            requirements.state::<Db>();
        }
        async fn render(&self, _: NoInput, _: Invocation) -> Result<String, AgentError> {
            Ok(String::new())
        }
    }

    #[test]
    fn a_missing_state_is_one_problem_naming_every_item_that_takes_it() {
        let error = Carmy::new()
            .tool(Search)
            .resource(Catalog)
            .tool(Count)
            .prompt(Help)
            .build()
            .unwrap_err();
        let db = std::any::type_name::<Db>();
        assert_eq!(
            error.problems(),
            [
                BuildProblem::MissingState {
                    type_name: db.into(),
                    tools: vec!["search".into(), "count".into()],
                    resources: vec!["catalog".into()],
                    prompts: vec!["help".into()],
                },
                BuildProblem::MissingState {
                    type_name: "u8".into(),
                    tools: vec!["count".into()],
                    resources: vec![],
                    prompts: vec![],
                },
            ]
        );
        assert_eq!(
            error.problems()[0].to_string(),
            format!(
                "tools `search` and `count`, resource `catalog` and prompt `help` take \
                 `State<{db}>`, but no `{db}` is registered: add `.state(...)` with one to the \
                 builder"
            )
        );
        assert_eq!(
            error.problems()[1].to_string(),
            "tool `count` takes `State<u8>`, but no `u8` is registered: add `.state(...)` with \
             one to the builder"
        );
        // Each problem on a line of its own.
        assert_eq!(
            error.to_string(),
            format!(
                "cannot build the catalog:\n- {}\n- {}",
                error.problems()[0],
                error.problems()[1]
            )
        );
    }

    #[test]
    fn a_registered_state_is_no_problem() {
        let runtime = Carmy::new()
            .tool(Search)
            .resource(Catalog)
            .prompt(Help)
            .state(Db)
            .build();
        assert!(runtime.is_ok(), "{:?}", runtime.err());
        let _ = State::new(Db);
    }

    /// A tool whose input is `I`.
    struct Takes<I>(std::marker::PhantomData<I>);
    impl<I: crate::tool::ToolInput + Sync> Tool for Takes<I> {
        type Input = I;
        type Output = ();
        const SPEC: ToolSpec = ToolSpec::new("shout", Effect::None);
        async fn run(&self, _: I, _: Invocation) -> Result<(), AgentError> {
            Ok(())
        }
    }

    fn takes<I: crate::tool::ToolInput + Sync>() -> Takes<I> {
        Takes(std::marker::PhantomData)
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Text {
        text: String,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Shape {
        Circle { radius: f64 },
        Square { side: f64 },
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(untagged)]
    enum TextOrNumber {
        Text(String),
        Number(f64),
    }

    #[test]
    fn a_tool_input_that_is_not_an_object_is_refused() {
        for (build, schema_type, input) in [
            (
                Carmy::new().tool(takes::<String>()).build(),
                "`\"type\": \"string\"`",
                std::any::type_name::<String>(),
            ),
            (
                Carmy::new().tool(takes::<Vec<u32>>()).build(),
                "`\"type\": \"array\"`",
                std::any::type_name::<Vec<u32>>(),
            ),
            (
                Carmy::new().tool(takes::<Value>()).build(),
                "no `\"type\"`",
                std::any::type_name::<Value>(),
            ),
            (
                Carmy::new().tool(takes::<TextOrNumber>()).build(),
                "no `\"type\"`",
                std::any::type_name::<TextOrNumber>(),
            ),
        ] {
            let error = build.expect_err(input);
            assert_eq!(
                error.problems(),
                [BuildProblem::InputNotObject {
                    tool: "shout".into(),
                    input_type: input.into(),
                    stated: schema_type.into(),
                }],
                "{input}"
            );
            let message = error.to_string();
            assert!(
                message.starts_with(&format!(
                    "cannot build the catalog: tool `shout` takes `{input}` as its input, whose \
                     schema has {schema_type}"
                )),
                "{message}"
            );
            assert!(
                message.ends_with(
                    "but MCP passes a tool's arguments as one JSON object: take a struct whose \
                     named fields are the arguments, e.g. `struct Input { text: String }` \
                     deriving `Deserialize` and `JsonSchema` (`serde_json::Map<String, Value>` \
                     for any object, no input parameter for none)"
                ),
                "{message}"
            );
        }
    }

    #[test]
    fn object_inputs_are_accepted_in_either_profile() {
        for profile in [SchemaProfile::Portable, SchemaProfile::Raw] {
            let build = |carmy: Carmy| carmy.schema_profile(profile).build();
            assert!(build(Carmy::new().tool(takes::<Text>())).is_ok());
            assert!(build(Carmy::new().tool(takes::<NoInput>())).is_ok());
            assert!(build(Carmy::new().tool(takes::<serde_json::Map<String, Value>>())).is_ok());
        }
        // A tagged enum is an object of one shape or another.
        let runtime = Carmy::new().tool(takes::<Shape>()).build().unwrap();
        let schema = runtime.catalog().get("shout").unwrap().input_schema();
        assert_eq!(schema["type"], "object", "{schema:#}");
    }
}
