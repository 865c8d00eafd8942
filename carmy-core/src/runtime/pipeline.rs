//! The pipeline's steps, in the order a call meets them: resolve, validate, approve, claim,
//! admit, run, settle. Each hands the next what it needs, or ends the call; `Runtime::execute`
//! records how it ended.

use std::{future::Future, sync::Arc, time::Duration};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{
    Begun, CallTool, Ending, Inner, Request,
    claim::{Claimed, Settles, Taken, Unclaimed, takes_claim},
    guard::guarded,
    result_size,
    suspension::until_asked,
    task::slot::TaskSlot,
};
use crate::{
    admission::{Admission, AdmissionRequest, Permit, Serialization, waited_too_long},
    approval::{Approval, ApprovalRequest, CallApprover, HostGrants},
    catalog::{MAX_TOOL_NAME_LEN, ToolEntry},
    context::{Asking, Context},
    effect::Confirmation,
    erased::Prepared,
    error::AgentError,
    excerpt::excerpt,
    execution::{ExecutionId, ExecutionKind, ExecutionStatus},
    history::Running,
    idempotency::{
        Claim, Fingerprint, IdempotencyKey, LeaseTerms, MAX_REQUEST_ID_LEN, Recorded, Release,
    },
    outcome::OutcomeKind,
    progress::ProgressReporter,
    records::Records,
    reported::Reported,
    suspension::AskRoute,
    task::TaskSupport,
    tool::Invocation,
};

/// How long a claim outlives the longest execution it can cover (waiting for its turn, then
/// running, each bounded by the tool's timeout), so that a live holder never loses it: half
/// the timeout, between these bounds. A longer margin only makes the retry of a call whose
/// holder died wait longer.
const MIN_LEASE_MARGIN: Duration = Duration::from_secs(1);
const MAX_LEASE_MARGIN: Duration = Duration::from_secs(30);

/// One call as the pipeline sees it: the request, less its arguments, and when it began.
pub(super) struct Call {
    pub(super) begun: Begun,
    request_id: Option<String>,
    context: Context,
    pub(super) cancellation: CancellationToken,
    progress: ProgressReporter,
    approver: Option<CallApprover>,
    /// Who answers the tool's questions, and where the tool stops when the answers come on
    /// the caller's next try.
    asking: Option<Asking>,
    /// The caller can follow a task.
    allow_task: bool,
    /// Set when the call may become a task: where its first answer goes.
    pub(super) task: Option<Arc<TaskSlot>>,
    /// The changes the tool reports, told once the call succeeded; `None` when the runtime
    /// reports no changes of its own resources.
    pub(super) reported: Option<Arc<Reported>>,
}

impl Call {
    pub(super) fn new(
        id: ExecutionId,
        request: Request,
        task: Option<Arc<TaskSlot>>,
    ) -> (Self, Value) {
        let Request {
            operation:
                CallTool {
                    tool,
                    arguments,
                    request_id,
                    progress,
                    approver,
                    asker,
                    allow_task,
                },
            context,
            cancellation,
        } = request;
        let call = Self {
            begun: Begun::now(id, ExecutionKind::Tool, tool),
            request_id,
            context,
            cancellation,
            progress,
            approver,
            asking: asker.map(|asker| Asking {
                asker,
                suspension: Arc::default(),
                task: task
                    .as_ref()
                    .map(|slot| Arc::clone(&slot.route) as Arc<dyn AskRoute>),
            }),
            allow_task,
            task,
            reported: None,
        };
        (call, arguments)
    }

    /// The host's context of the call.
    pub(super) fn context(&self) -> &Context {
        &self.context
    }

    /// What stops the execution.
    pub(super) fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }
}

/// How a call ended.
pub(super) enum Ended<'h> {
    /// It was executed (or refused, or stopped): a new execution to record.
    Execution(Ending<'h, Value>),
    /// An earlier execution with the same request id finished: its outcome, replayed.
    Replay(Recorded),
}

/// Ends a call before its tool ran.
fn rejected<'h>(entry: &ToolEntry, error: AgentError) -> Ended<'h> {
    Ended::Execution(Ending::stopped(
        Some(entry.name()),
        ExecutionStatus::Rejected,
        error,
    ))
}

/// Ends a call cancelled while it waited (for approval, a running duplicate, its turn).
fn cancelled<'h>(entry: &ToolEntry) -> Ended<'h> {
    Ended::Execution(Ending::stopped(
        Some(entry.name()),
        ExecutionStatus::Cancelled,
        AgentError::cancelled(),
    ))
}

impl Inner {
    pub(super) async fn pipeline(&self, call: &Call, arguments: Value) -> Ended<'_> {
        match self.steps(call, arguments).await {
            Ok(ending) | Err(Ended::Execution(ending)) => Ended::Execution(ending),
            Err(replay) => replay,
        }
    }

    async fn steps(&self, call: &Call, arguments: Value) -> Result<Ending<'_, Value>, Ended<'_>> {
        let entry = self.resolve(call)?;
        if !call.context.allows_tool(entry) {
            return Err(rejected(entry, AgentError::tool_not_allowed(entry.name())));
        }
        if entry.task_support() == TaskSupport::Required && !call.allow_task {
            return Err(rejected(entry, AgentError::task_required(entry.name())));
        }
        let arguments = self.validate(entry, arguments)?;
        // The rare paths are boxed: a future is as large as its largest await, and adapters
        // move it into a task per call.
        if entry.confirmation() == Confirmation::Required {
            Box::pin(self.approve(entry, &arguments, call)).await?;
        }
        let mut claimed = match &call.request_id {
            Some(request_id) if request_id.len() > MAX_REQUEST_ID_LEN => {
                let error = AgentError::invalid_request_id(request_id.len());
                return Err(rejected(entry, error));
            }
            Some(request_id) if takes_claim(entry) => {
                if let Some(unclaimed) = self.unclaimed(entry, &arguments, request_id, call).await
                    && let Ok(run) =
                        Box::pin(self.run_unclaimed(entry, &arguments, call, &unclaimed)).await
                {
                    return Ok(ending(entry, call, run));
                }
                // Taken meanwhile, if it ran unclaimed: claimed now, to wait for its holder or
                // replay its outcome.
                Some(Box::pin(self.claim(entry, &arguments, request_id, call)).await?)
            }
            // No request id, or a tool that runs again on every retry: nothing to claim.
            _ => None,
        };
        let (status, result, running) = self
            .admit_and_run(entry, arguments, call, &mut claimed)
            .await;
        if let Some(claimed) = claimed {
            Box::pin(claimed.settle(&call.begun.id, status, &result)).await;
        }
        Ok(ending(entry, call, (status, result, running)))
    }

    /// The tool named exactly as sent.
    // An `Ended` is returned once, to end the call, never passed through layers of `?`:
    // boxing it would cost an allocation per refused call for nothing.
    #[allow(clippy::result_large_err)]
    fn resolve(&self, call: &Call) -> Result<&ToolEntry, Ended<'_>> {
        match self.catalog.get(&call.begun.named) {
            Some(entry) => {
                tracing::Span::current().record("effect", entry.effect().as_str());
                Ok(entry)
            }
            // To a caller held to some tools, a missing one is answered as a hidden one is:
            // which tools exist beyond its rules is none of its business.
            None if call.context.restricts_tools() => Err(Ended::Execution(Ending::stopped(
                None,
                ExecutionStatus::Rejected,
                AgentError::tool_not_allowed(&excerpt(&call.begun.named, MAX_TOOL_NAME_LEN)),
            ))),
            None => Err(Ended::Execution(Ending {
                target: None,
                status: ExecutionStatus::Rejected,
                result: Err(AgentError::tool_not_found(&call.begun.named)),
                kind: OutcomeKind::Unroutable,
                running: None,
            })),
        }
    }

    /// The arguments, checked against the published input schema.
    #[allow(clippy::result_large_err)]
    fn validate(&self, entry: &ToolEntry, arguments: Value) -> Result<Value, Ended<'_>> {
        entry
            .validate_arguments(arguments, self.limits.max_argument_depth)
            .map_err(|error| rejected(entry, error))
    }

    /// May the call run? The host's grants first, then the call's approver.
    async fn approve(
        &self,
        entry: &ToolEntry,
        arguments: &Value,
        call: &Call,
    ) -> Result<(), Ended<'_>> {
        let request = ApprovalRequest {
            tool: entry,
            arguments,
            caller: call.context.caller(),
            execution_id: &call.begun.id,
        };
        let Approval::Declined(required) = HostGrants::decide(&request) else {
            return Ok(());
        };
        let Some(approver) = &call.approver else {
            return Err(rejected(entry, required));
        };
        let wait = self.limits.approval_timeout;
        let approval = tokio::select! {
            approval = approver.0.approve_boxed(request) => approval,
            () = call.cancellation.cancelled() => return Err(cancelled(entry)),
            () = tokio::time::sleep(wait) => {
                return Err(rejected(entry, AgentError::confirmation_timeout(entry.name(), wait)));
            }
        };
        match approval {
            Approval::Granted => Ok(()),
            Approval::Declined(error) => Err(rejected(entry, error)),
            Approval::Ask(pending) => Err(Ended::Execution(Ending {
                target: Some(entry.name()),
                status: ExecutionStatus::InputRequired,
                result: Err(AgentError::confirmation_asked(entry.name())),
                kind: OutcomeKind::InputRequired(pending),
                running: None,
            })),
        }
    }

    /// The request id of a write (see [`takes_claim`]), claimed for this execution; or the end
    /// of the call, when the id was used before.
    async fn claim(
        &self,
        entry: &ToolEntry,
        arguments: &Value,
        request_id: &str,
        call: &Call,
    ) -> Result<Claimed, Ended<'_>> {
        let key = IdempotencyKey::new(call.context.principal(), request_id);
        let fingerprint = Fingerprint::of(entry.name(), arguments);
        // A write, not idempotent (`takes_claim`). A transactional one's effects commit with
        // its outcome: if the outcome was not recorded, nothing was done, and a retry may run
        // it again.
        let may_have_effects = !entry.transactional();
        let terms = LeaseTerms {
            duration: entry
                .timeout()
                .saturating_mul(2)
                .saturating_add((entry.timeout() / 2).clamp(MIN_LEASE_MARGIN, MAX_LEASE_MARGIN)),
            if_lost: if may_have_effects {
                Release::Uncertain(ExecutionStatus::Lost)
            } else {
                Release::Retry
            },
        };
        loop {
            let claim = self
                .store
                .claim_boxed(&key, fingerprint, terms)
                .await
                .map_err(|error| rejected(entry, error.into_agent_error()))?;
            match claim {
                Claim::Acquired(lease) => {
                    return Ok(Claimed::new(
                        Arc::clone(&self.store),
                        lease,
                        may_have_effects,
                    ));
                }
                Claim::Finished(recorded) => return Err(Ended::Replay(recorded)),
                Claim::Running(waiter) => tokio::select! {
                    () = waiter => {}
                    () = call.cancellation.cancelled() => return Err(cancelled(entry)),
                },
                Claim::Conflict => {
                    return Err(rejected(
                        entry,
                        AgentError::idempotency_conflict(request_id),
                    ));
                }
                Claim::Uncertain(previous) => {
                    return Err(rejected(
                        entry,
                        AgentError::execution_uncertain(request_id, previous.as_str()),
                    ));
                }
            }
        }
    }

    /// The request id of a transactional call that may run unclaimed: one the store has not
    /// seen, of a call that will not become a task (a task's driver works under a lease).
    /// `None` sends the call to be claimed first, as a store that cannot answer also does.
    async fn unclaimed(
        &self,
        entry: &ToolEntry,
        arguments: &Value,
        request_id: &str,
        call: &Call,
    ) -> Option<Unclaimed> {
        if !entry.transactional() || call.task.is_some() {
            return None;
        }
        let store = self.records.as_ref()?;
        let key = IdempotencyKey::new(call.context.principal(), request_id);
        if !store.unclaimed_boxed(&key).await.unwrap_or(false) {
            return None;
        }
        let fingerprint = Fingerprint::of(entry.name(), arguments);
        Some(Unclaimed { key, fingerprint })
    }

    /// Admission, then the runs of a transactional call whose commit records its request id;
    /// [`Taken`] if another call claimed it first.
    async fn run_unclaimed(
        &self,
        entry: &ToolEntry,
        arguments: &Value,
        call: &Call,
        unclaimed: &Unclaimed,
    ) -> Result<Run<'_>, Taken> {
        let _permits = match self.admit(entry, call).await {
            Ok(permits) => permits,
            Err((status, error)) => return Ok((status, Err(error), None)),
        };
        let settles = Settles::Unclaimed(unclaimed);
        self.run_transaction(entry, arguments, call, settles).await
    }

    /// Admission, then the run. A call that never started leaves its claim to be released.
    async fn admit_and_run(
        &self,
        entry: &ToolEntry,
        arguments: Value,
        call: &Call,
        claimed: &mut Option<Claimed>,
    ) -> Run<'_> {
        let _permits = match self.admit(entry, call).await {
            Ok(permits) => permits,
            Err((status, error)) => return (status, Err(error), None),
        };
        self.run(entry, arguments, call, claimed).await
    }

    /// Capacity, the rate limit, the tool's turn, then the added admissions; every permit is
    /// held until the run ends.
    async fn admit(
        &self,
        entry: &ToolEntry,
        call: &Call,
    ) -> Result<Permits, (ExecutionStatus, AgentError)> {
        let capacity = self
            .capacity
            .try_admit()
            .map_err(|error| (ExecutionStatus::Rejected, error))?;
        // After capacity, so a call refused for it takes nothing from the caller's bucket;
        // before the tool's turn, so a call over its rate does not queue first.
        // A tool without a limit asks nothing of any store.
        if let Some(limiter) = &entry.rate_limiter {
            self.rate_limits
                .take(
                    limiter,
                    entry.name(),
                    call.context.caller().principal_shared(),
                )
                .await
                .map_err(|error| (ExecutionStatus::Rejected, error))?;
        }
        let request = AdmissionRequest {
            tool: entry,
            caller: call.context.caller(),
        };
        let turn = match entry.serial.is_some() {
            true => Some(wait_for(Serialization.admit(request), entry, call).await?),
            false => None,
        };
        let mut added = Vec::new();
        for admission in &self.admissions {
            added.push(wait_for(admission.admit_boxed(request), entry, call).await?);
        }
        Ok(Permits {
            _capacity: capacity,
            _turn: turn,
            _added: added,
        })
    }

    /// The tool, on its decoded input, under its deadline and the request's cancellation,
    /// with panics caught and its output checked against its output schema. A transactional
    /// tool commits its writes with its outcome ([`Inner::run_transaction`]).
    async fn run(
        &self,
        entry: &ToolEntry,
        arguments: Value,
        call: &Call,
        claimed: &mut Option<Claimed>,
    ) -> Run<'_> {
        if entry.transactional() {
            let settles = Settles::Claim(claimed);
            return match Box::pin(self.run_transaction(entry, &arguments, call, settles)).await {
                Ok(run) => run,
                // Only a commit of an unclaimed request id finds it taken.
                Err(Taken) => {
                    let error = AgentError::internal("a claimed request id was taken");
                    (ExecutionStatus::Failed, Err(error), None)
                }
            };
        }
        let prepared = match Arc::clone(&entry.tool).prepare(arguments) {
            Ok(prepared) => prepared,
            Err(error) => return (ExecutionStatus::Rejected, Err(error), None),
        };
        if let Err(error) = self.become_task_now(entry, call).await {
            return (ExecutionStatus::Rejected, Err(error), None);
        }
        let running = self.history.start(
            call.begun.id.clone(),
            ExecutionKind::Tool,
            entry.name(),
            call.begun.started_at,
        );
        if let Some(claimed) = claimed {
            claimed.ran = true;
        }
        let (status, result) = self
            .run_prepared(entry, prepared, call, self.reader(), entry.timeout())
            .await;
        (status, result, Some(running))
    }

    /// A call that becomes a task as its tool starts does so before it starts: a task that
    /// cannot be created is a call refused, and nothing ran.
    pub(super) async fn become_task_now(
        &self,
        entry: &ToolEntry,
        call: &Call,
    ) -> Result<(), AgentError> {
        match &call.task {
            Some(slot) if entry.task_after().is_zero() => {
                Box::pin(self.detach(entry, call, slot)).await
            }
            _ => Ok(()),
        }
    }

    /// One run of a decoded tool, with `records` as its view of the records, for at most
    /// `timeout`.
    pub(super) async fn run_prepared(
        &self,
        entry: &ToolEntry,
        prepared: Prepared,
        call: &Call,
        records: Records,
        timeout: Duration,
    ) -> (ExecutionStatus, Result<Value, AgentError>) {
        let tool_token = call.cancellation.child_token();
        let progress = match &call.task {
            Some(slot) => slot.progress(&call.progress),
            None => call.progress.clone(),
        };
        let invocation = Invocation::new(
            call.context.for_execution(
                call.begun.id.clone(),
                tool_token.clone(),
                progress,
                call.asking.clone(),
                records,
                call.reported.clone(),
            ),
            Arc::clone(&self.states),
        );
        let run = guarded(prepared(invocation), timeout, &call.cancellation, "tool");
        // A tool that asks for answers coming on the caller's next try stops at its ask.
        let run = until_asked(run, call.asking.as_ref(), entry.name());
        let ran = match &call.task {
            Some(slot) if !slot.detached() => {
                Box::pin(self.run_then_detach(run, entry, call, slot)).await
            }
            _ => run.await,
        };
        let (status, result) = match ran {
            (ExecutionStatus::Succeeded, Ok(mut output)) => {
                let max = self.limits.max_result_bytes;
                match result_size::check(&output, max, "tool", entry.name())
                    .and_then(|()| entry.validate_output(&mut output))
                {
                    Ok(()) => (ExecutionStatus::Succeeded, Ok(output)),
                    Err(error) => (ExecutionStatus::Failed, Err(error)),
                }
            }
            other => other,
        };
        // The tool's future is dropped by now; wake anything it handed the token to.
        tool_token.cancel();
        (status, result)
    }
}

/// How a call that reached its tool ended, with the questions it stopped at, if any.
fn ending<'h>(
    entry: &ToolEntry,
    call: &Call,
    (status, result, running): Run<'h>,
) -> Ending<'h, Value> {
    let asked = call
        .asking
        .as_ref()
        .and_then(|asking| asking.suspension.take());
    Ending {
        target: Some(entry.name()),
        status,
        result,
        kind: asked.map_or(OutcomeKind::Result, OutcomeKind::InputRequired),
        running,
    }
}

/// How a run ended, and the history's entry of a tool that started.
pub(super) type Run<'h> = (
    ExecutionStatus,
    Result<Value, AgentError>,
    Option<Running<'h>>,
);

/// What admission granted, held until the run ends.
struct Permits {
    _capacity: Permit,
    _turn: Option<Permit>,
    _added: Vec<Permit>,
}

/// One admission, waited for at most the tool's timeout and never past a cancellation.
async fn wait_for(
    admitted: impl Future<Output = Result<Permit, AgentError>>,
    entry: &ToolEntry,
    call: &Call,
) -> Result<Permit, (ExecutionStatus, AgentError)> {
    let wait = entry.timeout();
    tokio::select! {
        biased;
        admitted = admitted => admitted.map_err(|error| (ExecutionStatus::Rejected, error)),
        () = call.cancellation.cancelled() => {
            Err((ExecutionStatus::Cancelled, AgentError::cancelled()))
        }
        () = tokio::time::sleep(wait) => {
            Err((ExecutionStatus::Rejected, waited_too_long(entry.name(), wait)))
        }
    }
}
