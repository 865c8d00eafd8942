//! Admission: may this call start now? A step of the pipeline, after the request id is
//! claimed and before the tool runs.
//!
//! Two admissions are built in and always on: [`Capacity`] (executions running at once,
//! across tools: past the bound, calls are refused rather than queued) and [`Serialization`]
//! (a tool whose executions must not overlap waits for its turn). Others (rate limits, quotas)
//! are added with [`Carmy::admission`](crate::Carmy::admission) and asked after them, in the
//! order added. The first refusal stops the call, which is recorded as rejected; every
//! [`Permit`] granted is held until the execution ends.

use std::{fmt, future::Future, pin::Pin, sync::Arc, time::Duration};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{caller::Caller, catalog::ToolEntry, error::AgentError};

/// Decides whether a call may start now, and may make it wait for its turn.
///
/// ```
/// use carmy_core::{Admission, AdmissionRequest, AgentError, Permit};
///
/// /// Refuses every call from principals other than the allowed one.
/// struct OnlyAlice;
///
/// impl Admission for OnlyAlice {
///     async fn admit(&self, request: AdmissionRequest<'_>) -> Result<Permit, AgentError> {
///         match request.caller().principal() {
///             Some("alice") => Ok(Permit::none()),
///             _ => Err(AgentError::permission("NOT_ALICE", "only alice may call")),
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an admission policy",
    label = "not an admission policy",
    note = "implement `async fn admit(&self, request: AdmissionRequest<'_>) -> Result<Permit, AgentError>` for `{Self}`"
)]
pub trait Admission: Send + Sync + 'static {
    /// Admits the call (the permit is held until the execution ends) or refuses it with the
    /// error the caller gets. Waiting is allowed; the runtime stops waiting when the call is
    /// cancelled or has waited as long as its tool's timeout.
    fn admit(
        &self,
        request: AdmissionRequest<'_>,
    ) -> impl Future<Output = Result<Permit, AgentError>> + Send;
}

/// The call an [`Admission`] is asked about.
#[derive(Clone, Copy, Debug)]
pub struct AdmissionRequest<'a> {
    pub(crate) tool: &'a ToolEntry,
    pub(crate) caller: &'a Caller,
}

impl<'a> AdmissionRequest<'a> {
    /// The tool, with its effect and policy.
    pub fn tool(&self) -> &'a ToolEntry {
        self.tool
    }

    /// The host's trusted facts about the caller (who is calling).
    pub fn caller(&self) -> &'a Caller {
        self.caller
    }
}

/// What an admission hands back for the length of the execution: dropping it ends the
/// admission (frees the slot, the turn...).
#[must_use]
pub struct Permit(PermitInner);

enum PermitInner {
    None,
    Semaphore(#[allow(dead_code)] OwnedSemaphorePermit),
    Held(#[allow(dead_code)] Box<dyn Send + Sync>),
}

impl Permit {
    /// Admitted, with nothing to hold.
    pub fn none() -> Self {
        Self(PermitInner::None)
    }

    /// Admitted, holding `guard` until the execution ends.
    pub fn holding(guard: impl Send + Sync + 'static) -> Self {
        Self(PermitInner::Held(Box::new(guard)))
    }
}

impl From<OwnedSemaphorePermit> for Permit {
    fn from(permit: OwnedSemaphorePermit) -> Self {
        Self(PermitInner::Semaphore(permit))
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            PermitInner::None => "Permit",
            PermitInner::Semaphore(_) => "Permit(semaphore)",
            PermitInner::Held(_) => "Permit(held)",
        })
    }
}

/// Built in: at most `max` executions at once, across all tools. Past it, calls are refused
/// with `CAPACITY` (retryable) rather than queued without bound.
#[derive(Debug)]
pub struct Capacity {
    slots: Arc<Semaphore>,
    max: usize,
}

impl Capacity {
    /// At most `max` executions at once.
    pub fn new(max: usize) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// Admits or refuses at once: capacity never waits.
    pub fn try_admit(&self) -> Result<Permit, AgentError> {
        match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(permit) => Ok(permit.into()),
            Err(_) => Err(AgentError::capacity(format!(
                "{} executions are already running; retry shortly",
                self.max
            ))),
        }
    }
}

impl Admission for Capacity {
    async fn admit(&self, _: AdmissionRequest<'_>) -> Result<Permit, AgentError> {
        self.try_admit()
    }
}

/// Built in: a tool that is not parallel-safe runs one execution at a time; the others wait
/// for their turn, in arrival order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serialization;

impl Admission for Serialization {
    async fn admit(&self, request: AdmissionRequest<'_>) -> Result<Permit, AgentError> {
        match &request.tool.serial {
            None => Ok(Permit::none()),
            Some(turn) => match Arc::clone(turn).acquire_owned().await {
                Ok(permit) => Ok(permit.into()),
                // The semaphore lives as long as the catalog and is never closed.
                Err(_) => Err(AgentError::internal("the tool's turn queue is closed")),
            },
        }
    }
}

/// The error of a call that waited for its turn as long as its tool's timeout.
pub(crate) fn waited_too_long(tool: &str, waited: Duration) -> AgentError {
    AgentError::capacity(format!(
        "`{tool}` did not get its turn within {} ms: its executions do not overlap and the \
         ones before it are still running; retry shortly",
        waited.as_millis()
    ))
}

/// An [`Admission`] behind a pointer: `admit` returns a boxed future.
pub(crate) trait DynAdmission: Send + Sync + 'static {
    fn admit_boxed<'a>(
        &'a self,
        request: AdmissionRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<Permit, AgentError>> + Send + 'a>>;
}

impl<A: Admission> DynAdmission for A {
    fn admit_boxed<'a>(
        &'a self,
        request: AdmissionRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<Permit, AgentError>> + Send + 'a>> {
        Box::pin(self.admit(request))
    }
}
