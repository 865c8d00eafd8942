//! The execution pipeline: every call, from name and JSON arguments to an [`Outcome`].

use std::{
    borrow::Cow,
    fmt,
    panic::AssertUnwindSafe,
    sync::Arc,
    time::{Instant, SystemTime},
};

use futures_util::FutureExt;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, field};

use crate::{
    catalog::Catalog,
    context::Context,
    effect::Confirmation,
    error::AgentError,
    execution::{ExecutionId, ExecutionStatus, Outcome},
    history::{ExecutionRecord, History},
    idempotency::{Claim, Fingerprint, IdempotencyKey, IdempotencyStore, Recorded},
    limits::Limits,
    progress::ProgressReporter,
    state::StateMap,
    tool::Invocation,
};

/// One call: a tool name, JSON arguments, and what the host knows about it.
///
/// ```
/// use carmy_core::{Context, Request};
///
/// let request = Request::new("place_order", serde_json::json!({ "sku": "MOUSE-1" }))
///     .request_id("order-7f3a")
///     .context(Context::new().with_principal("alice"));
/// ```
#[derive(Debug)]
#[must_use]
pub struct Request {
    tool: String,
    arguments: Value,
    request_id: Option<String>,
    context: Context,
    cancellation: CancellationToken,
    progress: ProgressReporter,
}

impl Request {
    /// A call of `tool` with `arguments` (`null` counts as `{}`), anonymous and ungranted.
    pub fn new(tool: impl Into<String>, arguments: Value) -> Self {
        Self {
            tool: tool.into(),
            arguments,
            request_id: None,
            context: Context::new(),
            cancellation: CancellationToken::new(),
            progress: ProgressReporter::disabled(),
        }
    }

    /// Makes the call idempotent: retries with the same id (from the same principal) get the
    /// first execution's outcome. The id should come from the host, not from the model.
    pub fn request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// The trusted context: principal, grants, extensions.
    pub fn context(mut self, context: Context) -> Self {
        self.context = context;
        self
    }

    /// A token whose cancellation stops the execution.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = token;
        self
    }

    /// Where the tool's progress reports go.
    pub fn progress(mut self, progress: ProgressReporter) -> Self {
        self.progress = progress;
        self
    }

    /// The tool name.
    pub fn tool(&self) -> &str {
        &self.tool
    }
}

/// A built catalog with its state and policies, ready to execute calls. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    catalog: Catalog,
    states: Arc<StateMap>,
    store: Arc<dyn IdempotencyStore>,
    limits: Limits,
    capacity: Semaphore,
    history: History,
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
        store: Arc<dyn IdempotencyStore>,
        limits: Limits,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                catalog,
                states,
                store,
                capacity: Semaphore::new(limits.max_concurrent_executions),
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
    /// Dropping the returned future stops the execution, as cancellation does.
    pub async fn execute(&self, request: Request) -> Outcome {
        let execution_id = ExecutionId::generate();
        let span = tracing::info_span!(
            "carmy.execute",
            tool = %request.tool,
            effect = field::Empty,
            execution_id = %execution_id,
            status = field::Empty,
            duration_ms = field::Empty,
        );
        let started = Instant::now();
        let outcome = self
            .pipeline(execution_id, request)
            .instrument(span.clone())
            .await;
        span.record("status", outcome.status.as_str());
        span.record("duration_ms", started.elapsed().as_secs_f64() * 1e3);
        outcome
    }

    /// The pipeline, top to bottom: resolve → validate → decode → confirm → idempotency →
    /// permits → run under deadline and cancellation → record.
    async fn pipeline(&self, execution_id: ExecutionId, request: Request) -> Outcome {
        let inner = &*self.inner;
        let started_at = SystemTime::now();
        let started = Instant::now();
        let Request {
            tool: tool_name,
            arguments,
            request_id,
            context,
            cancellation,
            progress,
        } = request;
        let mut record = ExecutionRecord {
            id: execution_id.clone(),
            tool: Cow::Owned(String::new()),
            status: ExecutionStatus::Rejected,
            started_at,
            duration: None,
            error_code: None,
        };
        let reject = |mut record: ExecutionRecord, error: AgentError| {
            record.duration = Some(started.elapsed());
            record.error_code = Some(error.code().to_owned());
            inner.history.finished(record);
            Outcome {
                execution_id: execution_id.clone(),
                status: ExecutionStatus::Rejected,
                result: Err(error),
            }
        };

        // 1. Resolve the tool.
        let Some(entry) = inner.catalog.get(&tool_name) else {
            record.tool = Cow::Owned(tool_name.clone());
            return reject(record, AgentError::tool_not_found(&tool_name));
        };
        record.tool = Cow::Borrowed(entry.name());
        tracing::Span::current().record("effect", entry.effect().as_str());

        // 2. Validate against the published schema.
        let arguments = match entry.validate_arguments(arguments, inner.limits.max_argument_depth) {
            Ok(arguments) => arguments,
            Err(error) => return reject(record, error),
        };
        let fingerprint = request_id
            .as_ref()
            .map(|_| Fingerprint::of(entry.name(), &arguments));

        // 3. Decode into the tool's input type.
        let prepared = match Arc::clone(&entry.tool).prepare(arguments) {
            Ok(prepared) => prepared,
            Err(error) => return reject(record, error),
        };

        // 4. Policy: confirmation comes from the host's grants only.
        if entry.confirmation() == Confirmation::Required && !context.can_confirm(entry.name()) {
            return reject(record, AgentError::confirmation_required(entry.name()));
        }

        // 5. Idempotency: claim the request id, or replay / wait / refuse.
        let mut claim = None;
        if let (Some(request_id), Some(fingerprint)) = (&request_id, fingerprint) {
            let key = IdempotencyKey::new(context.principal(), request_id);
            loop {
                let answer = match inner.store.claim(&key, fingerprint) {
                    Ok(answer) => answer,
                    Err(error) => return reject(record, error),
                };
                match answer {
                    Claim::Acquired => break,
                    Claim::Finished(recorded) => {
                        tracing::debug!(replayed = %recorded.execution_id, "replaying a recorded outcome");
                        return Outcome {
                            execution_id: recorded.execution_id,
                            status: ExecutionStatus::Replayed,
                            result: recorded.result,
                        };
                    }
                    Claim::Running(waiter) => {
                        tokio::select! {
                            () = waiter => continue,
                            () = cancellation.cancelled() => {
                                record.status = ExecutionStatus::Cancelled;
                                return finish_interrupted(inner, record, started, AgentError::cancelled());
                            }
                        }
                    }
                    Claim::Conflict => {
                        return reject(record, AgentError::idempotency_conflict(request_id));
                    }
                    Claim::Uncertain(previous) => {
                        return reject(
                            record,
                            AgentError::execution_uncertain(request_id, previous.as_str()),
                        );
                    }
                }
            }
            claim = Some(ClaimGuard {
                store: Arc::clone(&inner.store),
                key,
                uncertain_if_interrupted: !entry.effect().is_read_only() && !entry.idempotent(),
                ran: false,
                settled: false,
            });
        }

        // 6. Permits: the global bound, then the tool's own serialization.
        let Ok(_capacity) = inner.capacity.try_acquire() else {
            return reject(
                record,
                AgentError::capacity(format!(
                    "{} executions are already running; retry shortly",
                    inner.limits.max_concurrent_executions
                )),
            );
        };
        let _serial = match &entry.serial {
            None => None,
            Some(serial) => tokio::select! {
                permit = serial.acquire() => permit.ok(),
                () = cancellation.cancelled() => {
                    record.status = ExecutionStatus::Cancelled;
                    return finish_interrupted(inner, record, started, AgentError::cancelled());
                }
            },
        };

        // 7. Run under the deadline and the cancellation, catching panics.
        record.status = ExecutionStatus::Running;
        inner.history.started(record.clone());
        let tool_token = cancellation.child_token();
        let invocation = Invocation::new(
            context.for_execution(execution_id.clone(), tool_token.clone(), progress),
            Arc::clone(&inner.states),
        );
        if let Some(claim) = &mut claim {
            claim.ran = true;
        }
        let run = AssertUnwindSafe(prepared(invocation)).catch_unwind();
        let (status, result) = tokio::select! {
            biased;
            finished = run => match finished {
                Ok(Ok(mut output)) => match entry.validate_output(&mut output) {
                    Ok(()) => (ExecutionStatus::Succeeded, Ok(output)),
                    Err(error) => (ExecutionStatus::Failed, Err(error)),
                },
                // A tool that noticed the cancellation and gave up was cancelled, not failed.
                Ok(Err(_)) if cancellation.is_cancelled() => {
                    (ExecutionStatus::Cancelled, Err(AgentError::cancelled()))
                }
                Ok(Err(error)) => (ExecutionStatus::Failed, Err(error)),
                Err(panic) => {
                    tracing::error!(panic = panic_message(&panic), "tool panicked");
                    (ExecutionStatus::Panicked, Err(AgentError::tool_panic()))
                }
            },
            () = cancellation.cancelled() => (ExecutionStatus::Cancelled, Err(AgentError::cancelled())),
            () = tokio::time::sleep(entry.timeout()) => {
                (ExecutionStatus::TimedOut, Err(AgentError::timeout(entry.timeout())))
            }
        };
        // The tool's future is dropped by now; wake anything it handed the token to.
        tool_token.cancel();

        // 8. Record the outcome.
        if let Some(claim) = claim {
            claim.settle(status, &execution_id, &result);
        }
        record.status = status;
        record.duration = Some(started.elapsed());
        record.error_code = result.as_ref().err().map(|error| error.code().to_owned());
        inner.history.finished(record);
        Outcome {
            execution_id,
            status,
            result,
        }
    }
}

fn finish_interrupted(
    inner: &Inner,
    mut record: ExecutionRecord,
    started: Instant,
    error: AgentError,
) -> Outcome {
    record.duration = Some(started.elapsed());
    record.error_code = Some(error.code().to_owned());
    let outcome = Outcome {
        execution_id: record.id.clone(),
        status: record.status,
        result: Err(error),
    };
    inner.history.finished(record);
    outcome
}

/// Holds an idempotency claim until the execution settles; if the pipeline is dropped midway
/// (the caller went away), the claim is released or marked uncertain so retries never hang.
struct ClaimGuard {
    store: Arc<dyn IdempotencyStore>,
    key: IdempotencyKey,
    /// The tool may change state and is not idempotent: an interrupted run may have committed.
    uncertain_if_interrupted: bool,
    /// Whether the tool started running; a claim given up before that is simply released.
    ran: bool,
    settled: bool,
}

impl ClaimGuard {
    fn settle(
        mut self,
        status: ExecutionStatus,
        id: &ExecutionId,
        result: &Result<Value, AgentError>,
    ) {
        self.settled = true;
        if status.is_interrupted() {
            self.interrupt(status);
        } else {
            let recorded = Recorded {
                execution_id: id.clone(),
                status,
                result: result.clone(),
            };
            self.store.finish(&self.key, recorded);
        }
    }

    fn interrupt(&self, status: ExecutionStatus) {
        let uncertain = self.uncertain_if_interrupted && self.ran;
        self.store.interrupt(&self.key, status, uncertain);
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        if !self.settled {
            self.interrupt(ExecutionStatus::Cancelled);
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}
