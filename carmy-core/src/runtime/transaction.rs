//! Transactional tools: each run's record writes are committed together with its outcome, or
//! the tool runs again on fresh reads (see [`crate::records`]).
//!
//! A call whose request id the store has not seen runs unclaimed, and its one commit records
//! the request id with the writes and the outcome ([`RecordStore::commit_unclaimed`]). Should
//! the request id be claimed meanwhile (a duplicate in flight), nothing is applied and the call
//! is claimed as usual: it waits for the other and replays its outcome.
//!
//! [`RecordStore::commit_unclaimed`]: crate::records::RecordStore::commit_unclaimed

use std::{
    hash::{BuildHasher, RandomState},
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::Value;

use super::{
    Inner,
    claim::{Claimed, Settles, Taken, Unclaimed},
    pipeline::{Call, Run},
};
use crate::{
    catalog::ToolEntry,
    error::AgentError,
    execution::{ExecutionKind, ExecutionStatus},
    idempotency::{Recorded, StoreError},
    records::{Committed, DynRecordStore, Records, UnclaimedCommit, transaction::Pending},
};

/// Runs of one call, at most: past this many conflicts the call fails (retryable) rather than
/// spin while others keep winning.
const MAX_ATTEMPTS: u32 = 32;
/// The pause after the first conflict; it doubles (with jitter) up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const LONGEST_PAUSE: Duration = Duration::from_millis(64);

/// What one run came to.
enum Attempt {
    /// Committed, or ended without anything to commit: how the call ends.
    Ended(ExecutionStatus, Result<Value, AgentError>),
    /// What it read changed before it could commit: nothing was applied.
    Conflict,
    /// The unclaimed request id was claimed meanwhile: nothing was applied.
    Taken,
}

impl Inner {
    /// The transactional tool, run until one run commits (or fails, or time runs out), each
    /// run under what is left of the tool's deadline.
    pub(super) async fn run_transaction(
        &self,
        entry: &ToolEntry,
        arguments: &Value,
        call: &Call,
        mut settles: Settles<'_>,
    ) -> Result<Run<'_>, Taken> {
        let mut prepared = match Arc::clone(&entry.tool).prepare(arguments.clone()) {
            Ok(prepared) => prepared,
            Err(error) => return Ok((ExecutionStatus::Rejected, Err(error), None)),
        };
        let Some(store) = self.records.clone() else {
            // `build()` refuses a transactional tool on a store without records.
            return Ok((
                ExecutionStatus::Rejected,
                Err(AgentError::internal(
                    "this runtime's store keeps no records",
                )),
                None,
            ));
        };
        if let Err(error) = self.become_task_now(entry, call).await {
            return Ok((ExecutionStatus::Rejected, Err(error), None));
        }
        let running = self.history.start(
            call.begun.id.clone(),
            ExecutionKind::Tool,
            entry.name(),
            call.begun.started_at,
        );
        if let Settles::Claim(Some(claimed)) = &mut settles {
            claimed.ran = true;
        }
        let deadline = Instant::now() + entry.timeout();
        let mut attempt = 1;
        loop {
            let records = Records::transaction(Arc::clone(&store));
            let left = deadline.saturating_duration_since(Instant::now());
            let (status, result) = self
                .run_prepared(entry, prepared, call, records.clone(), left)
                .await;
            let pending = records.take();
            let committed = match &mut settles {
                Settles::Claim(claimed) => {
                    commit(&*store, call, claimed, status, result, pending).await
                }
                Settles::Unclaimed(unclaimed) => {
                    commit_unclaimed(&*store, call, unclaimed, status, result, pending).await
                }
            };
            match committed {
                Attempt::Ended(status, result) => return Ok((status, result, Some(running))),
                Attempt::Conflict => {}
                Attempt::Taken => {
                    running.discard();
                    return Err(Taken);
                }
            }
            let pause = pause_after(attempt);
            if attempt >= MAX_ATTEMPTS || Instant::now() + pause >= deadline {
                tracing::warn!(attempts = attempt, "a transactional tool kept conflicting");
                if let Settles::Claim(Some(claimed)) = &mut settles {
                    claimed.release_only = true;
                }
                let error = AgentError::transaction_conflict(entry.name(), attempt);
                return Ok((ExecutionStatus::Failed, Err(error), Some(running)));
            }
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = call.cancellation.cancelled() => {
                    let error = AgentError::cancelled();
                    return Ok((ExecutionStatus::Cancelled, Err(error), Some(running)));
                }
            }
            attempt += 1;
            prepared = match Arc::clone(&entry.tool).prepare(arguments.clone()) {
                Ok(prepared) => prepared,
                Err(error) => return Ok((ExecutionStatus::Failed, Err(error), Some(running))),
            };
        }
    }
}

/// Commits one run: its reads checked, its writes applied (a failed run's are dropped: its
/// error is kept only if what it read still holds) and, under the call's lease, its outcome
/// recorded, all at once.
async fn commit(
    store: &dyn DynRecordStore,
    call: &Call,
    claimed: &mut Option<Claimed>,
    status: ExecutionStatus,
    result: Result<Value, AgentError>,
    pending: Pending,
) -> Attempt {
    // Stopped (interrupted, or at its questions): nothing was committed, and the claim is
    // released for the retry to run anew.
    if status.is_interrupted() || status == ExecutionStatus::InputRequired {
        return Attempt::Ended(status, result);
    }
    let not_kept = |claimed: &mut Option<Claimed>| {
        if let Some(claimed) = claimed {
            claimed.release_only = true;
        }
    };
    if pending.store_failed {
        // The store failed a read: whatever the tool made of it is no outcome to replay.
        not_kept(claimed);
        let error = StoreError::unavailable("a record could not be read").into_agent_error();
        return Attempt::Ended(ExecutionStatus::Failed, Err(error));
    }
    let mut changes = pending.into_changes();
    if result.is_err() {
        changes.writes.clear();
    }
    let lease = claimed.as_ref().and_then(Claimed::lease).cloned();
    let recorded = lease
        .as_ref()
        .map(|_| Recorded::new(call.begun.id.clone(), status, result.clone()));
    let nothing_to_check =
        changes.writes.is_empty() && changes.reads.is_empty() && changes.listed.is_empty();
    if lease.is_none() && nothing_to_check {
        return Attempt::Ended(status, result);
    }
    let outcome = lease.as_ref().zip(recorded.as_ref());
    match store.commit_boxed(&changes, outcome).await {
        Ok(Committed::Done) => {
            if let Some(claimed) = claimed {
                claimed.settled_elsewhere();
            }
            Attempt::Ended(status, result)
        }
        Ok(Committed::Conflict) => Attempt::Conflict,
        Err(StoreError::LeaseLost) => {
            // The key is no longer this execution's: nothing was applied, nothing to settle.
            if let Some(claimed) = claimed {
                claimed.settled_elsewhere();
            }
            let error = StoreError::LeaseLost.into_agent_error();
            Attempt::Ended(ExecutionStatus::Failed, Err(error))
        }
        Err(error) => {
            // Nothing was applied, or (a reply lost after the commit) everything was and the
            // key is finished: releasing it is then refused, which is harmless.
            not_kept(claimed);
            Attempt::Ended(ExecutionStatus::Failed, Err(error.into_agent_error()))
        }
    }
}

/// Commits one run of a call whose request id was not claimed: its reads checked, its writes
/// applied (a failed run's dropped) and the request id recorded, finished with its outcome,
/// all at once; or nothing, if the request id was claimed meanwhile.
async fn commit_unclaimed(
    store: &dyn DynRecordStore,
    call: &Call,
    unclaimed: &Unclaimed,
    status: ExecutionStatus,
    result: Result<Value, AgentError>,
    pending: Pending,
) -> Attempt {
    // Stopped (interrupted, or at its questions): nothing is recorded, and a retry runs anew.
    if status.is_interrupted() || status == ExecutionStatus::InputRequired {
        return Attempt::Ended(status, result);
    }
    if pending.store_failed {
        let error = StoreError::unavailable("a record could not be read").into_agent_error();
        return Attempt::Ended(ExecutionStatus::Failed, Err(error));
    }
    let mut changes = pending.into_changes();
    if result.is_err() {
        changes.writes.clear();
    }
    let recorded = Recorded::new(call.begun.id.clone(), status, result.clone());
    let committed = store
        .commit_unclaimed_boxed(&changes, &unclaimed.key, unclaimed.fingerprint, &recorded)
        .await;
    match committed {
        Ok(UnclaimedCommit::Done) => Attempt::Ended(status, result),
        Ok(UnclaimedCommit::Conflict) => Attempt::Conflict,
        Ok(UnclaimedCommit::Taken) => Attempt::Taken,
        // The principal's share (or the store) is full: refused as a claim would have been,
        // with nothing applied.
        Err(error @ StoreError::Full(_)) => {
            Attempt::Ended(ExecutionStatus::Rejected, Err(error.into_agent_error()))
        }
        // Nothing was applied, or (a reply lost after the commit) everything was: a retry then
        // finds the request id finished, with this execution's outcome.
        Err(error) => Attempt::Ended(ExecutionStatus::Failed, Err(error.into_agent_error())),
    }
}

/// How long to wait after the `attempt`-th conflict: doubling from [`FIRST_PAUSE`], at most
/// [`LONGEST_PAUSE`], with jitter so replicas that collided do not collide again in step.
fn pause_after(attempt: u32) -> Duration {
    let ceiling = FIRST_PAUSE
        .saturating_mul(1 << attempt.min(16))
        .min(LONGEST_PAUSE);
    let jitter = RandomState::new().hash_one(attempt) % 1000;
    ceiling.mul_f64(0.5 + jitter as f64 / 2000.0)
}
