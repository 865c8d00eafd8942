//! The tools the benchmarks run, implemented by hand on `carmy_core::Tool`.

use carmy_bench::catalog::{self, SearchInput, SearchOutput};
use carmy_core::{AgentError, Carmy, Effect, Invocation, NoInput, Runtime, Tool, ToolSpec};
use schemars::JsonSchema;
use serde::Serialize;

/// `search_products` over the bench catalog, as the contenders serve it.
pub(crate) struct Search;

impl Tool for Search {
    type Input = SearchInput;
    type Output = SearchOutput;
    const SPEC: ToolSpec =
        ToolSpec::new("search_products", Effect::Read).description(catalog::DESCRIPTION);

    async fn run(&self, input: SearchInput, _: Invocation) -> Result<SearchOutput, AgentError> {
        Ok(catalog::search(&input))
    }
}

/// A tool that does nothing, to see the pipeline's fixed cost.
pub(crate) struct Noop;

/// The output of [`Noop`].
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Ack {
    pub(crate) ok: bool,
}

impl Tool for Noop {
    type Input = NoInput;
    type Output = Ack;
    const SPEC: ToolSpec = ToolSpec::new("noop", Effect::None).description("Do nothing.");

    async fn run(&self, _: NoInput, _: Invocation) -> Result<Ack, AgentError> {
        Ok(Ack { ok: true })
    }
}

/// A runtime with [`Search`] and [`Noop`].
pub(crate) fn runtime() -> Runtime {
    Carmy::new()
        .tool(Search)
        .tool(Noop)
        .build()
        .expect("the benchmark catalog builds")
}

/// The arguments of the benchmarks' `search_products` calls.
pub(crate) fn mouse() -> serde_json::Value {
    serde_json::json!({ "query": "mouse" })
}

/// A current-thread tokio runtime, as cheap a host as there is.
pub(crate) fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
