//! Testing tools through the real pipeline, in process.

use serde_json::Value;

use crate::{
    context::Context,
    outcome::Outcome,
    runtime::{Request, Runtime},
};

/// Calls a runtime's tools the way a host would, with a chosen context.
///
/// ```
/// # use carmy_core::{AgentError, Carmy, Effect, Invocation, NoInput, Tool, ToolSpec};
/// # struct Purge;
/// # impl Tool for Purge {
/// #     type Input = NoInput;
/// #     type Output = ();
/// #     const SPEC: ToolSpec = ToolSpec::new("purge", Effect::Destructive);
/// #     async fn run(&self, _: NoInput, _: Invocation) -> Result<(), AgentError> { Ok(()) }
/// # }
/// use carmy_core::testing::TestHost;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let host = TestHost::new(Carmy::new().tool(Purge).build().unwrap());
/// assert_eq!(host.call("purge", serde_json::json!({})).await.unwrap_error_code(), "CONFIRMATION_REQUIRED");
/// let host = host.with_grant("confirm:purge");
/// assert!(host.call("purge", serde_json::json!({})).await.is_ok());
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct TestHost {
    runtime: Runtime,
    context: Context,
}

impl TestHost {
    /// An anonymous host without grants.
    pub fn new(runtime: Runtime) -> Self {
        Self {
            runtime,
            context: Context::new(),
        }
    }

    /// Uses `context` for every call.
    #[must_use]
    pub fn with_context(mut self, context: Context) -> Self {
        self.context = context;
        self
    }

    /// Adds a grant such as `confirm:cancel_order`.
    #[must_use]
    pub fn with_grant(mut self, grant: &str) -> Self {
        self.context = self.context.with_grant(grant);
        self
    }

    /// Names the principal.
    #[must_use]
    pub fn with_principal(mut self, principal: &str) -> Self {
        self.context = self.context.with_principal(principal);
        self
    }

    /// The runtime under test.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Calls `tool` with `arguments`.
    pub async fn call(&self, tool: &str, arguments: Value) -> Outcome {
        self.execute(Request::new(tool, arguments)).await
    }

    /// Calls `tool` with `arguments` under `request_id`.
    pub async fn call_with_request_id(
        &self,
        tool: &str,
        arguments: Value,
        request_id: &str,
    ) -> Outcome {
        self.execute(Request::new(tool, arguments).request_id(request_id))
            .await
    }

    /// Runs a request under this host's context.
    pub async fn execute(&self, request: Request) -> Outcome {
        self.runtime
            .execute(request.context(self.context.clone()))
            .await
    }
}
