//! The runtime: a built catalog with its state and policies, executing calls.

mod access;
mod claim;
mod complete;
mod get_prompt;
mod guard;
mod middleware;
mod pipeline;
mod read;
mod request;
mod result_size;
mod suspension;
mod task;
mod transaction;

use std::{
    borrow::Cow,
    fmt,
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use serde_json::Value;
use tracing::{Instrument, field};

use crate::{
    admission::{Capacity, DynAdmission},
    catalog::{Catalog, MAX_TOOL_NAME_LEN},
    error::AgentError,
    excerpt::excerpt,
    execution::{ExecutionId, ExecutionKind, ExecutionStatus},
    history::{ExecutionRecord, History, Running},
    idempotency::DynStore,
    limits::Limits,
    outcome::{Outcome, OutcomeKind},
    rate_limit_store::RateLimits,
    records::DynRecordStore,
    redemption::Redemptions,
    state::StateMap,
    task::DynTaskStore,
};

pub(crate) use middleware::DynMiddleware;
use middleware::FromAnswer;
pub use middleware::{Answer, Incoming, Middleware, Next};
use pipeline::{Call, Ended};
pub use request::{
    CallTool, Complete, CompletionTarget, GetPrompt, Operation, ReadResource, Request,
};

/// The longest error code kept in an execution's record (codes are a tool's to choose).
const MAX_CODE_LEN: usize = 64;

/// A built catalog with its state and policies, ready to execute calls. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    catalog: Catalog,
    states: Arc<StateMap>,
    store: Arc<dyn DynStore>,
    /// The store's records (`None`: it keeps none).
    records: Option<Arc<dyn DynRecordStore>>,
    task_store: Arc<dyn DynTaskStore>,
    /// Where single-use tokens are remembered once redeemed.
    redemptions: Redemptions,
    /// Where rate-limited tools' buckets are taken from.
    rate_limits: RateLimits,
    /// When the task store was last asked to sweep.
    last_sweep: std::sync::Mutex<Option<Instant>>,
    limits: Limits,
    capacity: Capacity,
    /// Admissions added with `Carmy::admission`, asked after the built-in ones.
    admissions: Vec<Arc<dyn DynAdmission>>,
    /// Middleware added with `Carmy::middleware`, the first outermost.
    middleware: Vec<Arc<dyn DynMiddleware>>,
    history: History,
}

/// Where a runtime keeps what outlives a call, as the builder chose.
pub(crate) struct Stores {
    /// Claims and outcomes.
    pub(crate) store: Arc<dyn DynStore>,
    /// The store's records (`None`: it keeps none).
    pub(crate) records: Option<Arc<dyn DynRecordStore>>,
    pub(crate) task_store: Arc<dyn DynTaskStore>,
    pub(crate) redemptions: Redemptions,
    /// The shared buckets of rate-limited tools, if any.
    pub(crate) rate_limits: RateLimits,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("catalog", &self.inner.catalog)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    pub(crate) fn new(
        catalog: Catalog,
        states: Arc<StateMap>,
        stores: Stores,
        admissions: Vec<Arc<dyn DynAdmission>>,
        middleware: Vec<Arc<dyn DynMiddleware>>,
        limits: Limits,
    ) -> Self {
        let Stores {
            store,
            records,
            task_store,
            redemptions,
            rate_limits,
        } = stores;
        Self {
            inner: Arc::new(Inner {
                catalog,
                states,
                store,
                records,
                task_store,
                redemptions,
                rate_limits,
                last_sweep: std::sync::Mutex::new(None),
                capacity: Capacity::new(limits.max_concurrent_executions),
                admissions,
                middleware,
                history: History::new(limits.execution_history),
                limits,
            }),
        }
    }

    /// The tools.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Where single-use tokens are remembered once redeemed: the store given to
    /// [`Carmy::redemption_store`](crate::Carmy::redemption_store), or one in memory. Adapters
    /// redeem a token (a sealed request state carrying a confirmation) here before honouring
    /// it, so it is used once whichever replica sees it.
    pub fn redemptions(&self) -> &Redemptions {
        &self.inner.redemptions
    }

    /// The status of a running or recently finished execution.
    pub fn execution(&self, id: &ExecutionId) -> Option<ExecutionRecord> {
        self.inner.history.get(id)
    }

    /// Executions running now.
    pub fn running_executions(&self) -> usize {
        self.inner.history.running()
    }

    /// Calls `tool` with `arguments`, anonymously and without grants. A shortcut for tests and
    /// command lines; hosts use [`Runtime::execute`].
    pub async fn call(&self, tool: &str, arguments: Value) -> Outcome {
        self.execute(Request::new(tool, arguments)).await
    }

    /// Runs one call through the whole pipeline and returns its outcome. Never panics because a
    /// tool did, and never runs a tool twice for one request id.
    ///
    /// The pipeline, step by step (each may end the call; see the error table in docs/01-tools.md):
    ///
    /// 1. **resolve** the tool by its exact name (`TOOL_NOT_FOUND`), and refuse a tool that
    ///    runs only as a task to a caller that cannot follow one (`TASK_REQUIRED`);
    /// 2. **validate** the arguments against the published input schema (`INVALID_ARGUMENTS`);
    /// 3. **approve**, for tools that need confirmation: the host's grant `confirm:<tool>`,
    ///    else the request's [`Approver`](crate::Approver) (`CONFIRMATION_*`);
    /// 4. **claim** the request id, when there is one: replay a finished call, wait for a
    ///    running one, refuse a conflicting or uncertain one;
    /// 5. **admit**: capacity, the tool's turn when its executions must not overlap, then the
    ///    admissions added with [`Carmy::admission`](crate::Carmy::admission) (`CAPACITY`...);
    /// 6. **run** the tool on its decoded input, under its deadline and the request's
    ///    cancellation, catching panics, and check its output against its output schema. A
    ///    call that may become a task ([`Request::allow_task`]) becomes one when its tool
    ///    starts, or once it has run for its `task_after`: the caller is answered with the
    ///    task ([`OutcomeKind::Task`]) and the execution runs on, its outcome recorded in the
    ///    task store too;
    /// 7. **settle** the claim: the outcome recorded for replay, or the claim released.
    ///
    /// Every call that does not end in a replay is recorded once, with its status, in the
    /// history that [`Runtime::execution`] reads.
    ///
    /// Dropping the returned future stops the execution, as cancellation does.
    ///
    /// ```
    /// use carmy_core::{
    ///     AgentError, Carmy, Context, Effect, ExecutionStatus, Invocation, NoInput, Request, Tool,
    ///     ToolSpec,
    /// };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// struct Charge;
    /// impl Tool for Charge {
    ///     type Input = NoInput;
    ///     type Output = u32;
    ///     const SPEC: ToolSpec = ToolSpec::new("charge", Effect::ExternalWrite);
    ///     async fn run(&self, _: NoInput, _: Invocation) -> Result<u32, AgentError> {
    ///         Ok(42)
    ///     }
    /// }
    /// let runtime = Carmy::new().tool(Charge).build()?;
    /// let charge = || {
    ///     Request::new("charge", serde_json::json!({}))
    ///         .request_id("invoice-17")
    ///         .context(Context::new().with_principal("alice"))
    /// };
    /// let first = runtime.execute(charge()).await;
    /// let retry = runtime.execute(charge()).await;
    /// assert_eq!(first.status, ExecutionStatus::Succeeded);
    /// assert_eq!(retry.status, ExecutionStatus::Replayed); // ran once
    /// assert_eq!(retry.execution_id, first.execution_id);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn execute(&self, request: Request) -> Outcome {
        if self.inner.middleware.is_empty() {
            return self.execute_served(request).await;
        }
        FromAnswer::from_answer(self.through(request.into()).await)
    }

    /// [`execute`](Self::execute), inside the middleware.
    async fn execute_served(&self, request: Request) -> Outcome {
        if self.may_detach(&request) {
            // The rare path is boxed: a future is as large as its largest await.
            return Box::pin(self.execute_detachable(request)).await;
        }
        let (call, arguments) = Call::new(ExecutionId::generate(), request, None);
        self.execute_call(call, arguments).await
    }

    /// The pipeline of one call, and the record of how it ended.
    async fn execute_call(&self, mut call: Call, arguments: Value) -> Outcome {
        let watchers = &self.catalog().watchers;
        if watchers.reports_own_changes() {
            call.reported = Some(Arc::default());
        }
        let span = tracing::info_span!(
            "carmy.execute",
            tool = %excerpt(&call.begun.named, MAX_TOOL_NAME_LEN),
            effect = field::Empty,
            execution_id = %call.begun.id,
            status = field::Empty,
            duration_ms = field::Empty,
        );
        let ended = self
            .inner
            .pipeline(&call, arguments)
            .instrument(span.clone())
            .await;
        let duration = call.begun.started.elapsed();
        let Call {
            begun,
            task,
            reported,
            ..
        } = call;
        let outcome = match ended {
            Ended::Execution(ending) => self.inner.conclude(begun, ending, duration),
            Ended::Replay(recorded) => {
                // The runtime's own line, as `conclude` gives each execution.
                tracing::debug!(
                    kind = ExecutionKind::Tool.as_str(),
                    target = %excerpt(&begun.named, MAX_TOOL_NAME_LEN),
                    status = ExecutionStatus::Replayed.as_str(),
                    duration_ms = duration.as_secs_f64() * 1e3,
                    execution_id = %recorded.execution_id,
                    "execution replayed"
                );
                Outcome {
                    execution_id: recorded.execution_id,
                    status: ExecutionStatus::Replayed,
                    result: recorded.result,
                    kind: OutcomeKind::Result,
                }
            }
        };
        // What the tool changed is told once its call succeeded (committed, if transactional).
        if let Some(reported) = reported
            && outcome.status == ExecutionStatus::Succeeded
        {
            let changes = watchers.changes();
            for change in reported.take() {
                changes.report(&change);
            }
        }
        if let Some(task) = task {
            task.finish(&outcome).await;
        }
        span.record("status", outcome.status.as_str());
        span.record("duration_ms", duration.as_secs_f64() * 1e3);
        outcome
    }
}

/// What every execution has once it begins, whatever it runs.
pub(super) struct Begun {
    pub(super) id: ExecutionId,
    pub(super) kind: ExecutionKind,
    /// The tool name or the URI as sent; recorded, cut short, when it names nothing.
    pub(super) named: String,
    pub(super) started_at: SystemTime,
    pub(super) started: Instant,
}

impl Begun {
    pub(super) fn now(id: ExecutionId, kind: ExecutionKind, named: String) -> Self {
        Self {
            id,
            kind,
            named,
            started_at: SystemTime::now(),
            started: Instant::now(),
        }
    }
}

/// What to record of an execution that ran (or was refused, or stopped), and hand back. A
/// replay is the earlier execution's, and is not one of these.
pub(super) struct Ending<'h, T> {
    /// The tool or resource, once resolved.
    pub(super) target: Option<&'static str>,
    pub(super) status: ExecutionStatus,
    pub(super) result: Result<T, AgentError>,
    pub(super) kind: OutcomeKind,
    /// The history's entry of code that started running.
    pub(super) running: Option<Running<'h>>,
}

impl<'h, T> Ending<'h, T> {
    /// Ended before any code ran, or while waiting.
    pub(super) fn stopped(
        target: Option<&'static str>,
        status: ExecutionStatus,
        error: AgentError,
    ) -> Self {
        Self {
            target,
            status,
            result: Err(error),
            kind: OutcomeKind::Result,
            running: None,
        }
    }
}

impl Inner {
    /// Records how an execution ended and hands back its outcome: the one place an
    /// execution's outcome is written down.
    fn conclude<T>(&self, begun: Begun, ending: Ending<'_, T>, duration: Duration) -> Outcome<T> {
        let record = ExecutionRecord {
            id: begun.id.clone(),
            kind: begun.kind,
            // A name that routes nowhere is the caller's input: kept in part.
            target: ending.target.map_or_else(
                || Cow::Owned(excerpt(&begun.named, MAX_TOOL_NAME_LEN).into_owned()),
                Cow::Borrowed,
            ),
            status: ending.status,
            started_at: begun.started_at,
            duration: Some(duration),
            error_code: ending
                .result
                .as_ref()
                .err()
                .map(|error| excerpt(error.code(), MAX_CODE_LEN).into_owned()),
        };
        // The runtime's own line for each execution: a client that asked for debug logs
        // (`logging/setLevel debug`) is told what ran even when the tool logs nothing.
        tracing::debug!(
            kind = record.kind.as_str(),
            target = %record.target,
            status = record.status.as_str(),
            duration_ms = duration.as_secs_f64() * 1e3,
            execution_id = %record.id,
            error_code = record.error_code.as_deref(),
            "execution ended"
        );
        match ending.running {
            Some(running) => running.finish(record),
            None => self.history.finished(record),
        }
        Outcome {
            execution_id: begun.id,
            status: ending.status,
            result: ending.result,
            kind: ending.kind,
        }
    }
}
