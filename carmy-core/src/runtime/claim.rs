//! A claimed request id, held by one execution until it is settled; which calls claim theirs;
//! and what a transactional call's commit settles: its claim, or a request id it records
//! unclaimed.

use std::sync::Arc;

use serde_json::Value;

use crate::{
    catalog::ToolEntry,
    error::AgentError,
    execution::{ExecutionId, ExecutionStatus},
    idempotency::{DynStore, Fingerprint, IdempotencyKey, Lease, Recorded, Release, StoreError},
};

/// Whether a call of `entry` under a request id claims it in the store. Only a write that is
/// not idempotent does: running it twice could do twice what it does once, so its outcome is
/// kept for its retries, and its key for the store's retention. A read-only or idempotent
/// tool runs again on every retry instead (running again is what a retry of it needs), so its
/// calls take no key from the principal's share, and a full share or a store that cannot
/// answer never refuses them.
pub(super) fn takes_claim(entry: &ToolEntry) -> bool {
    !entry.effect().is_read_only() && !entry.idempotent()
}

/// The claim of one execution. Settled once the execution ends: the outcome recorded for
/// replay, or the claim released. If the pipeline is dropped before that (the caller went
/// away), the release is sent from a task of its own; should even that be impossible (no
/// runtime left), the lease runs out and the store settles the key by the claim's terms.
pub(super) struct Claimed {
    store: Arc<dyn DynStore>,
    lease: Option<Lease>,
    /// The tool's effects are not committed with its outcome: if it is interrupted after it
    /// started, they may have been.
    may_have_effects: bool,
    /// Whether the tool started running; a claim given up before that is simply released.
    pub(super) ran: bool,
    /// The outcome is not one to replay (a transactional run that committed nothing): the
    /// claim is released for a retry to run anew, whatever the status.
    pub(super) release_only: bool,
}

impl Claimed {
    pub(super) fn new(store: Arc<dyn DynStore>, lease: Lease, may_have_effects: bool) -> Self {
        Self {
            store,
            lease: Some(lease),
            may_have_effects,
            ran: false,
            release_only: false,
        }
    }

    /// The lease held, to commit an outcome under.
    pub(super) fn lease(&self) -> Option<&Lease> {
        self.lease.as_ref()
    }

    /// The claim was settled by a commit that recorded the outcome with the tool's writes (or
    /// is no longer this execution's): nothing is left to do.
    pub(super) fn settled_elsewhere(&mut self) {
        self.lease = None;
    }

    /// What to tell the store of an execution that stopped with `status` before finishing.
    fn release_for(&self, status: ExecutionStatus) -> Release {
        if self.may_have_effects && self.ran {
            Release::Uncertain(status)
        } else {
            Release::Retry
        }
    }

    /// Records the outcome for replay, or releases the claim of an execution that did not
    /// finish (or never started).
    pub(super) async fn settle(
        mut self,
        execution_id: &ExecutionId,
        status: ExecutionStatus,
        result: &Result<Value, AgentError>,
    ) {
        let Some(lease) = self.lease.take() else {
            return;
        };
        let settled = if status == ExecutionStatus::InputRequired {
            // Stopped at its questions, to run again from the start with the answers: the
            // retry that carries them claims the request id anew.
            self.store.release_boxed(&lease, Release::Retry).await
        } else if self.release_only {
            self.store.release_boxed(&lease, Release::Retry).await
        } else if status.is_interrupted() || !self.ran {
            let release = self.release_for(status);
            self.store.release_boxed(&lease, release).await
        } else {
            let recorded = Recorded::new(execution_id.clone(), status, result.clone());
            self.store.finish_boxed(&lease, recorded).await
        };
        if let Err(error) = settled {
            report(&error, &lease);
        }
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        let Some(lease) = self.lease.take() else {
            return;
        };
        let release = self.release_for(ExecutionStatus::Cancelled);
        let store = Arc::clone(&self.store);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    if let Err(error) = store.release_boxed(&lease, release).await {
                        report(&error, &lease);
                    }
                });
            }
            Err(_) => tracing::warn!(
                request_id = lease.key().request_id(),
                "an execution was dropped outside a tokio runtime; its request id stays claimed until the lease runs out"
            ),
        }
    }
}

/// A claim the store would not settle: retries of this request id wait for its lease to run
/// out, then get what its terms say (a fresh run, or `EXECUTION_UNCERTAIN`).
fn report(error: &StoreError, lease: &Lease) {
    tracing::warn!(
        %error,
        request_id = lease.key().request_id(),
        "cannot settle the claim on a request id; retries wait for its lease to run out"
    );
}

/// The request id a transactional call's commit settles.
pub(super) enum Settles<'c> {
    /// The claim the call holds, if any (none: no request id, or a tool that claims none).
    Claim(&'c mut Option<Claimed>),
    /// A request id the store had not seen: recorded by the commit, if still unseen then.
    Unclaimed(&'c Unclaimed),
}

/// A request id to record with the commit instead of claiming it first.
pub(super) struct Unclaimed {
    pub(super) key: IdempotencyKey,
    pub(super) fingerprint: Fingerprint,
}

/// The unclaimed request id was claimed by another call before this one could commit:
/// nothing of this call was applied or recorded.
pub(super) struct Taken;
