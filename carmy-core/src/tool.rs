//! The `Tool` trait: what `#[tool]` implements, and what a hand-written tool implements.

use std::{future::Future, time::Duration};

use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    context::Context,
    effect::{Confirmation, Effect},
    error::AgentError,
    rate_limit::RateLimit,
    state::{Requirements, State, StateMap},
    task::TaskSupport,
};

/// A tool: static metadata, typed input and output, and an async body.
///
/// `#[tool]` implements this for you on a unit struct named after your function. Implement it
/// by hand when a tool needs configuration captured at start-up.
///
/// ```
/// use carmy_core::{AgentError, Carmy, Effect, Invocation, NoInput, Tool, ToolSpec};
///
/// struct Version(&'static str);
///
/// impl Tool for Version {
///     type Input = NoInput;
///     type Output = String;
///     const SPEC: ToolSpec = ToolSpec::new("version", Effect::None)
///         .description("The server's version.");
///
///     async fn run(&self, _input: NoInput, _invocation: Invocation) -> Result<String, AgentError> {
///         Ok(self.0.to_owned())
///     }
/// }
///
/// let runtime = Carmy::new().tool(Version("1.2.3")).build().unwrap();
/// assert_eq!(runtime.catalog().get("version").unwrap().effect(), Effect::None);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Carmy tool",
    label = "not a tool",
    note = "annotate an `async fn` with `#[carmy::tool(effect = \"read\")]` (or another effect) and pass the function's name, or implement `Tool` by hand"
)]
pub trait Tool: Send + Sync + 'static {
    /// The arguments, decoded from JSON after validation against the input schema.
    type Input: ToolInput;
    /// The result, encoded to JSON and checked against the output schema.
    type Output: ToolOutput;
    /// Name, description and effect metadata.
    const SPEC: ToolSpec;

    /// Declares the `State<T>` values the tool needs, so `build()` can check they exist.
    fn requirements(requirements: &mut Requirements) {
        let _ = requirements;
    }

    /// Runs the tool. The runtime has already validated the arguments, checked confirmation and
    /// idempotency, and will enforce the deadline and cancellation by dropping this future.
    fn run(
        &self,
        input: Self::Input,
        invocation: Invocation,
    ) -> impl Future<Output = Result<Self::Output, AgentError>> + Send;
}

/// A type a tool can take as its arguments: `Deserialize` and `JsonSchema`.
//
// No `#[diagnostic::on_unimplemented]` on this trait or `ToolOutput`: rustc would never show it.
// A missing derive is found where `Tool::Input: ToolInput` is checked, and there rustc also checks
// each of the bound's supertraits on its own, reports the one that fails (`SearchInput:
// JsonSchema`, on the user's type) and drops the `ToolInput` error, which fails on the same
// bound, as its duplicate.
// `#[diagnostic::do_not_recommend]` on the blanket impl does not change that (rustc 1.95), nor
// does a supertrait-free alias (`type Input = Input<T>`), which reports the error four times.
pub trait ToolInput: DeserializeOwned + JsonSchema + Send + 'static {}
impl<T: DeserializeOwned + JsonSchema + Send + 'static> ToolInput for T {}

/// A type a tool can return: `Serialize` and `JsonSchema`.
pub trait ToolOutput: Serialize + JsonSchema + Send + 'static {}
impl<T: Serialize + JsonSchema + Send + 'static> ToolOutput for T {}

/// The input of a tool that takes no arguments: the empty object `{}` (absent or `null`
/// arguments are accepted too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NoInput {}

impl<'de> serde::Deserialize<'de> for NoInput {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Validation already rejected anything but an object without properties.
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(NoInput {})
    }
}

impl JsonSchema for NoInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoInput".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {},
            "additionalProperties": false
        })
    }
}

/// A tool's static metadata. Built in a `const` by `#[tool]`; defaults follow the effect.
///
/// ```
/// use carmy_core::{Confirmation, Effect, ToolSpec};
///
/// const SPEC: ToolSpec = ToolSpec::new("cancel_order", Effect::Destructive)
///     .description("Cancel an order.");
/// assert_eq!(SPEC.confirmation_mode(), Confirmation::Required);
/// assert!(!SPEC.is_parallel_safe());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolSpec {
    name: &'static str,
    title: Option<&'static str>,
    description: &'static str,
    effect: Effect,
    idempotent: bool,
    transactional: bool,
    parallel_safe: Option<bool>,
    confirmation: Option<Confirmation>,
    timeout: Option<Duration>,
    rate_limit: Option<RateLimit>,
    task: TaskSupport,
    task_after: Option<Duration>,
}

impl ToolSpec {
    /// A tool named `name` with `effect`; everything else defaults from the effect.
    pub const fn new(name: &'static str, effect: Effect) -> Self {
        Self {
            name,
            title: None,
            description: "",
            effect,
            idempotent: false,
            transactional: false,
            parallel_safe: None,
            confirmation: None,
            timeout: None,
            rate_limit: None,
            task: TaskSupport::Forbidden,
            task_after: None,
        }
    }

    /// A human-friendly display name.
    pub const fn title(mut self, title: &'static str) -> Self {
        self.title = Some(title);
        self
    }

    /// What the tool does, for the model.
    pub const fn description(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// Calling twice with the same arguments has the same effect as calling once: a retry under
    /// the same request id runs the tool again, and the id is not kept.
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Declares that the tool's only effects are its writes to [`Records`](crate::Records):
    /// the runtime commits them in the store transaction that records the outcome, and may run
    /// the tool again when what it read changed meanwhile (see [`crate::records`]). For `write`
    /// and `destructive` tools; `build()` refuses it on others.
    pub const fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Overrides whether executions may overlap (default: only for `none` and `read`).
    pub const fn parallel_safe(mut self, parallel_safe: bool) -> Self {
        self.parallel_safe = Some(parallel_safe);
        self
    }

    /// Overrides whether the host must grant `confirm:<tool>` (default: only `destructive`).
    pub const fn confirmation(mut self, confirmation: Confirmation) -> Self {
        self.confirmation = Some(confirmation);
        self
    }

    /// The tool's own deadline, replacing the runtime's default.
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How often one principal may call the tool, replacing the runtime's default
    /// ([`Carmy::rate_limit`](crate::Carmy::rate_limit)); [`RateLimit::unlimited`] exempts it.
    pub const fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = Some(limit);
        self
    }

    /// Whether calls may become tasks (default: never).
    pub const fn task(mut self, task: TaskSupport) -> Self {
        self.task = task;
        self
    }

    /// How long a call that may become a task runs as a plain call first: if it ends (or asks
    /// its caller something) within `after`, it is answered in the call; past it, it becomes
    /// a task. Without it, such a call is a task from the moment the tool starts.
    pub const fn task_after(mut self, after: Duration) -> Self {
        self.task_after = Some(after);
        self
    }

    /// The tool's name, unique in a catalog.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The display name, if any.
    pub const fn title_text(&self) -> Option<&'static str> {
        self.title
    }

    /// The description.
    pub const fn description_text(&self) -> &'static str {
        self.description
    }

    /// The declared effect.
    pub const fn effect(&self) -> Effect {
        self.effect
    }

    /// Whether the tool is idempotent.
    pub const fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// Whether the tool's effects are its writes to [`Records`](crate::Records), committed
    /// together with its outcome ([`transactional`](Self::transactional)).
    pub const fn is_transactional(&self) -> bool {
        self.transactional
    }

    /// Whether executions may overlap, after defaults.
    pub const fn is_parallel_safe(&self) -> bool {
        match self.parallel_safe {
            Some(parallel_safe) => parallel_safe,
            None => self.effect.default_parallel_safe(),
        }
    }

    /// Whether the tool needs confirmation, after defaults.
    pub const fn confirmation_mode(&self) -> Confirmation {
        match self.confirmation {
            Some(confirmation) => confirmation,
            None => self.effect.default_confirmation(),
        }
    }

    /// The tool's own deadline, if it set one.
    pub const fn timeout_override(&self) -> Option<Duration> {
        self.timeout
    }

    /// The tool's own rate limit, if it set one.
    pub const fn rate_limit_override(&self) -> Option<RateLimit> {
        self.rate_limit
    }

    /// Whether calls may become tasks.
    pub const fn task_support(&self) -> TaskSupport {
        self.task
    }

    /// How long a call runs as a plain call before it becomes a task, if the tool said.
    pub const fn task_after_override(&self) -> Option<Duration> {
        self.task_after
    }
}

/// What the runtime hands a tool besides its input: the per-execution [`Context`] and the
/// registered [`State`] values.
#[derive(Clone, Debug)]
pub struct Invocation {
    context: Context,
    states: std::sync::Arc<StateMap>,
}

impl Invocation {
    pub(crate) fn new(context: Context, states: std::sync::Arc<StateMap>) -> Self {
        Self { context, states }
    }

    /// The trusted, per-execution context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// A clone of the context, for tools that take `Context` by value.
    pub fn context_owned(&self) -> Context {
        self.context.clone()
    }

    /// The registered value of type `T`.
    ///
    /// # Panics
    /// When `T` was not registered; `build()` rules that out for every `State<T>` a tool
    /// declares in [`Tool::requirements`].
    #[track_caller]
    pub fn state<T: Send + Sync + 'static>(&self) -> State<T> {
        self.states.get::<T>().unwrap_or_else(|| {
            panic!(
                "State<{}> is not registered; declare it in Tool::requirements",
                std::any::type_name::<T>()
            )
        })
    }
}
