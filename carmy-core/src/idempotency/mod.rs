//! Idempotency by request id: one execution per (principal, request id), its outcome replayed
//! to every retry.
//!
//! Only writes claim their request ids: a call of a read-only or idempotent tool runs again on
//! every retry, which is all its retry needs, so it never reaches the store. Every key a store
//! keeps is a write's, kept for the store's retention.
//!
//! The runtime drives an [`IdempotencyStore`] through three calls: [`claim`] a key before the
//! tool runs, then either [`finish`] it with the outcome or [`release`] it when the execution
//! stopped short. A claim is a [`Lease`]: if its holder never comes back (the process died,
//! the database connection dropped), the lease expires and the store settles the key as the
//! claim said it should ([`LeaseTerms::if_lost`]): released for calls that are safe to run
//! again, "uncertain" for writes that may have committed. Nothing depends on a destructor
//! running, so a store shared by replicas or kept on disk can honour every rule.
//!
//! [`claim`]: IdempotencyStore::claim
//! [`finish`]: IdempotencyStore::finish
//! [`release`]: IdempotencyStore::release

mod claims;
mod fingerprint;
mod weight;

use std::{fmt, future::Future, pin::Pin, sync::Arc, time::Duration};

use serde_json::Value;

use crate::{
    error::AgentError,
    execution::{ExecutionId, ExecutionStatus},
};

pub(crate) use claims::Claims;
pub use claims::MemoryStoreLimits;
pub use fingerprint::Fingerprint;
pub(crate) use weight::{not_kept, outcome_bytes, value_bytes};

pub use crate::limits::MAX_REQUEST_ID_LEN;

/// Who asked, and which request: retries of one request share a key, whatever connection they
/// arrive on. Keys of different principals never meet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    principal: Arc<str>,
    request_id: Arc<str>,
}

impl IdempotencyKey {
    /// The key of `request_id` sent by `principal` (`None`: the anonymous principal).
    pub fn new(principal: Option<&str>, request_id: &str) -> Self {
        Self {
            principal: principal.unwrap_or_default().into(),
            request_id: request_id.into(),
        }
    }

    /// The principal, empty for anonymous callers.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The request id.
    pub fn request_id(&self) -> &str {
        &self.request_id
    }
}

/// A finished execution's outcome, kept for replay.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Recorded {
    /// The execution that produced it.
    pub execution_id: ExecutionId,
    /// How it ended (`succeeded` or `failed`).
    pub status: ExecutionStatus,
    /// The output or the error, replayed as is.
    pub result: Result<Value, AgentError>,
}

impl Recorded {
    /// An outcome to keep (for stores that read one back from where they keep it).
    pub fn new(
        execution_id: ExecutionId,
        status: ExecutionStatus,
        result: Result<Value, AgentError>,
    ) -> Self {
        Self {
            execution_id,
            status,
            result,
        }
    }
}

/// A claim on a key, held by one execution until it is finished or released, or until it
/// expires. Finishing or releasing with a lease that is no longer the key's holder fails with
/// [`StoreError::LeaseLost`], so a late holder never overwrites its successor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    key: IdempotencyKey,
    token: u128,
}

impl Lease {
    /// A lease on `key`; `token` tells this holder from any other (random, or unique in the
    /// store).
    pub fn new(key: IdempotencyKey, token: u128) -> Self {
        Self { key, token }
    }

    /// The key held.
    pub fn key(&self) -> &IdempotencyKey {
        &self.key
    }

    /// What tells this holder from any other.
    pub fn token(&self) -> u128 {
        self.token
    }
}

/// The terms of a claim: how long it holds, and what becomes of the key if it expires
/// unsettled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTerms {
    /// How long the claim holds. The runtime asks for longer than the execution can last
    /// (waiting for its turn, then running under its deadline), so a live holder never loses
    /// it.
    pub duration: Duration,
    /// What the store does with the key when the lease expires without a word from its
    /// holder.
    pub if_lost: Release,
}

/// What to do with a claimed key whose execution did not finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// Forget the claim: the next retry runs the call anew. For calls that never started, or
    /// whose effects commit with their outcome (transactional tools).
    Retry,
    /// Keep the key, and answer retries [`Claim::Uncertain`] with this status: the tool may
    /// have had effects (a write interrupted while it ran).
    Uncertain(ExecutionStatus),
}

/// Resolves when a running execution with the same key finishes, gives up its claim, or its
/// lease expires: time to claim again.
pub type Waiter = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The answer to [`IdempotencyStore::claim`].
#[non_exhaustive]
pub enum Claim {
    /// Nobody ran this request yet: run it under this lease, then
    /// [`finish`](IdempotencyStore::finish) or [`release`](IdempotencyStore::release) it.
    Acquired(Lease),
    /// It ran and finished: replay this.
    Finished(Recorded),
    /// It is running now: wait, then claim again.
    Running(Waiter),
    /// The request id was used for another call.
    Conflict,
    /// It was interrupted after it may have had effects (the status says how).
    Uncertain(ExecutionStatus),
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Acquired(lease) => f.debug_tuple("Acquired").field(lease).finish(),
            Self::Finished(recorded) => f.debug_tuple("Finished").field(recorded).finish(),
            Self::Running(_) => f.write_str("Running"),
            Self::Conflict => f.write_str("Conflict"),
            Self::Uncertain(status) => f.debug_tuple("Uncertain").field(status).finish(),
        }
    }
}

/// Why a store could not answer. Every variant fails the call closed: nothing runs that the
/// store could not claim, and the caller may retry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store is at its bound and keeps every key it holds (none may be forgotten yet).
    #[error("the idempotency store is full: {0}")]
    Full(String),
    /// The store cannot be reached or failed (a database down, a timeout).
    #[error("the idempotency store is unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The lease is no longer the key's holder: it expired and the key was settled or claimed
    /// again.
    #[error("the claim on the request id expired before the execution settled it")]
    LeaseLost,
}

impl StoreError {
    /// What a store answers a claim past a principal's share: the principal holds
    /// `request_ids` keys weighing `bytes`, each kept for `retention`. Every store says it in
    /// these words, so that callers see one answer whichever store keeps their keys.
    pub fn share_full(request_ids: u64, bytes: u64, retention: Duration) -> Self {
        Self::Full(format!(
            "this principal holds {request_ids} request ids of writes ({bytes} bytes), all its \
             share of the idempotency store: a write under a new request id is refused until \
             its oldest are forgotten (each is kept {} s); calls that claim none (reads, \
             idempotent tools, calls without a request id) still run",
            retention.as_secs()
        ))
    }

    /// What a store answers a claim past its totals across principals.
    pub fn totals_full() -> Self {
        Self::Full(
            "the idempotency store holds all the request ids of writes it may keep: a write \
             under a new request id is refused until older ones are forgotten; calls that claim \
             none (reads, idempotent tools, calls without a request id) still run"
                .into(),
        )
    }

    /// An [`Unavailable`](Self::Unavailable) error from any error or message.
    pub fn unavailable(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Unavailable(error.into())
    }

    /// What the caller of a call refused for this is told. A store that cannot answer fails
    /// the call closed and says it is worth retrying; its own words stay in the log. This is
    /// the one place its errors become an agent's.
    pub(crate) fn into_agent_error(self) -> AgentError {
        match self {
            StoreError::Full(reason) => AgentError::capacity(reason),
            error => {
                tracing::warn!(%error, "the idempotency store failed a claim");
                AgentError::unavailable(
                    crate::error::codes::STORE_UNAVAILABLE,
                    "the request id could not be checked, so the call did not run; retry shortly",
                )
            }
        }
    }
}

/// Where claims and outcomes live. The default, [`MemoryStore`](crate::MemoryStore), is per
/// process; implement this over a shared database to keep idempotency across restarts and
/// replicas.
///
/// What an implementation promises:
/// - `claim` is atomic: of any number of concurrent claims of one key, one is `Acquired`, and
///   while its lease holds, the others see `Running` (or `Conflict`, for another fingerprint);
/// - a finished key answers `Finished` with the recorded outcome until the store forgets it
///   (by age, never to make room for another principal's keys while it is young);
/// - an expired lease is settled as its [`LeaseTerms::if_lost`] says, the next time anyone
///   looks at the key;
/// - `finish` and `release` apply only while the lease is the key's holder, and fail with
///   [`StoreError::LeaseLost`] otherwise;
/// - when it cannot answer, it says so ([`StoreError`]) rather than guess.
///
/// A store is shared with `Arc`; `Arc<S>` is a store too.
///
/// ```
/// use carmy_core::{
///     Claim, Fingerprint, IdempotencyKey, IdempotencyStore, LeaseTerms, MemoryStore, Recorded,
///     Release, ExecutionId, ExecutionStatus,
/// };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = MemoryStore::default();
/// let key = IdempotencyKey::new(Some("alice"), "order-7f3a");
/// let fingerprint = Fingerprint::of("place_order", &serde_json::json!({ "sku": "MOUSE-1" }));
/// let terms = LeaseTerms {
///     duration: std::time::Duration::from_secs(90),
///     if_lost: Release::Uncertain(ExecutionStatus::Lost),
/// };
/// let Claim::Acquired(lease) = store.claim(&key, fingerprint, terms).await? else { panic!() };
/// // ... run the tool, then:
/// let outcome = Recorded::new(ExecutionId::from("exec_1"), ExecutionStatus::Succeeded, Ok(serde_json::json!(7)));
/// store.finish(&lease, outcome).await?;
/// assert!(matches!(store.claim(&key, fingerprint, terms).await?, Claim::Finished(_)));
/// # Ok::<(), carmy_core::StoreError>(())
/// # }).unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an idempotency store",
    label = "not an idempotency store",
    note = "implement `claim`, `finish` and `release` of `IdempotencyStore` for `{Self}`, or use `MemoryStore`"
)]
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Claims `key` for a call with `fingerprint` under `terms`, or says what became of an
    /// earlier claim.
    fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> impl Future<Output = Result<Claim, StoreError>> + Send;

    /// Records the outcome of the execution holding `lease`, and wakes the waiters.
    fn finish(
        &self,
        lease: &Lease,
        recorded: Recorded,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The execution holding `lease` stopped before finishing: forget the claim, or keep the
    /// key as uncertain; wakes the waiters.
    fn release(
        &self,
        lease: &Lease,
        release: Release,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

impl<S: IdempotencyStore> IdempotencyStore for Arc<S> {
    fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> impl Future<Output = Result<Claim, StoreError>> + Send {
        (**self).claim(key, fingerprint, terms)
    }

    fn finish(
        &self,
        lease: &Lease,
        recorded: Recorded,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).finish(lease, recorded)
    }

    fn release(
        &self,
        lease: &Lease,
        release: Release,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).release(lease, release)
    }
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An [`IdempotencyStore`] behind a pointer: each call returns a boxed future.
pub(crate) trait DynStore: Send + Sync + 'static {
    fn claim_boxed<'a>(
        &'a self,
        key: &'a IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> BoxFuture<'a, Result<Claim, StoreError>>;

    fn finish_boxed<'a>(
        &'a self,
        lease: &'a Lease,
        recorded: Recorded,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    fn release_boxed<'a>(
        &'a self,
        lease: &'a Lease,
        release: Release,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}

impl<S: IdempotencyStore> DynStore for S {
    fn claim_boxed<'a>(
        &'a self,
        key: &'a IdempotencyKey,
        fingerprint: Fingerprint,
        terms: LeaseTerms,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        Box::pin(self.claim(key, fingerprint, terms))
    }

    fn finish_boxed<'a>(
        &'a self,
        lease: &'a Lease,
        recorded: Recorded,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.finish(lease, recorded))
    }

    fn release_boxed<'a>(
        &'a self,
        lease: &'a Lease,
        release: Release,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.release(lease, release))
    }
}
