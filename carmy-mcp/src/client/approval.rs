//! The approver of one call: asks the human through the client, by `elicitation/create`
//! (2025-11-25) or as the question [`CONFIRM_INPUT_KEY`] of an `input_required` answer
//! (2026-07-28).
//!
//! The runtime decides when to ask (the tool needs confirmation, the host granted none, the
//! arguments are valid); this module only knows how. Approved, the call runs once: on
//! 2026-07-28 the state that brings the answer back is redeemed once, whichever round it is
//! (the approval travels on in the state while the tool asks questions of its own). Nothing a
//! client sends can add a grant to the host's context.
//!
//! A call waiting for its answer (2025-11-25) keeps its arguments, as the runtime validated
//! them, until the user answers; the question itself is a short text. The runtime bounds the
//! wait (`Limits::approval_timeout`, then `CONFIRMATION_TIMEOUT`); whenever the call stops
//! waiting, at that deadline or cancelled, the question is withdrawn with
//! `notifications/cancelled`, so a late answer approves nothing ([`Withdraw`]). Only so many
//! calls may wait at once, per principal and in all, counted in calls and in the bytes of their
//! arguments (`waiting.rs`): past that, a call is refused at once (`CAPACITY`, retryable);
//! arguments too large to ever wait are `CONFIRMATION_REQUIRED`.
//!
//! The question is built from the tool's declared input fields (the required ones first), so
//! keys the tool does not declare can never push its target out of what the human reads
//! (`question.rs`).

use std::sync::Arc;

use carmy_core::{AgentError, Approval, ApprovalRequest, Approver, Asks, Pending};
use rmcp::{
    Peer, RoleServer,
    model::{
        CancelledNotification, CancelledNotificationParam, ClientResult, ElicitResult, RequestId,
        ServerNotification,
    },
    service::PeerRequestOptions,
};
use serde::Deserialize;

use crate::mapping::{CONFIRM_INPUT_KEY, approves, confirmation, server_request};

use crate::sync::lock;

use super::{
    question::question,
    round::{Channel, Modern, Round},
    waiting::{Waiting, weight},
};

/// Asks the human in front of the client about one call.
pub(crate) struct ClientApproval {
    round: Arc<Round>,
}

impl Approver for ClientApproval {
    async fn approve(&self, request: ApprovalRequest<'_>) -> Approval {
        let tool = request.tool().name();
        let principal = self.round.principal.as_deref();
        let answer = match &self.round.channel {
            Channel::Legacy { peer, waiting } => {
                // The runtime keeps the arguments while the user is asked: only so many may wait.
                let _place = match Waiting::place(waiting, principal, weight(request.arguments())) {
                    Ok(place) => place,
                    Err(crowded) => {
                        tracing::debug!(tool, ?crowded, "a call may not wait for its user");
                        return Approval::Declined(crowded.into_error(tool));
                    }
                };
                match self.ask(peer, tool, question(&request)).await {
                    Ok(answer) => answer,
                    Err(error) => return Approval::Declined(error),
                }
            }
            Channel::Modern(modern) => match answer_of(modern, tool, principal).await {
                Ok(Some(answer)) => answer,
                Ok(None) => {
                    return match modern.seal() {
                        Ok(state) => {
                            let form = confirmation(tool, question(&request));
                            let asks = Asks::new().with(CONFIRM_INPUT_KEY, form);
                            Approval::Ask(Pending::new(asks, Some(state)))
                        }
                        Err(error) => {
                            tracing::error!(%error, "cannot seal a confirmation state");
                            Approval::Declined(AgentError::internal("cannot ask for confirmation"))
                        }
                    };
                }
                Err(declined) => return Approval::Declined(declined),
            },
        };
        if approves(&answer) {
            tracing::debug!(tool, "the user approved the call");
            Approval::Granted
        } else {
            tracing::debug!(tool, action = ?answer.action, "the user did not approve the call");
            Approval::Declined(AgentError::confirmation_declined(tool))
        }
    }
}

/// The user's answer to the confirmation on 2026-07-28, from this round or an earlier one, with
/// the state that brought it back redeemed (once); `None` when the user was not asked yet.
async fn answer_of(
    modern: &Modern,
    tool: &str,
    principal: Option<&str>,
) -> Result<Option<ElicitResult>, AgentError> {
    // An answer counts only with a state: the question was asked, of this call.
    let (Some(state), Some(answer)) = (modern.state, modern.known.get(CONFIRM_INPUT_KEY)) else {
        return Ok(None);
    };
    modern.states.redeem(state, principal, tool).await?;
    let form = ElicitResult::deserialize(answer).map_err(|_| {
        AgentError::confirmation_invalid(tool, "the answer to the confirmation is not a form's")
    })?;
    // The answer travels on, as the client sent it, while the tool asks questions of its own.
    lock(&modern.carried).insert(CONFIRM_INPUT_KEY.to_owned(), answer.clone());
    Ok(Some(form))
}

impl ClientApproval {
    /// The approver of the call `round` belongs to, when the server lets the human confirm
    /// calls and the client can put a form to its user; `None` otherwise, and the runtime
    /// answers `CONFIRMATION_REQUIRED` as without this feature.
    pub(crate) fn of(round: &Arc<Round>) -> Option<Self> {
        round.confirms.then(|| Self {
            round: Arc::clone(round),
        })
    }

    /// `elicitation/create`, awaited as long as the runtime waits. When it stops waiting (its
    /// approval deadline, or the call cancelled), this future is dropped and the question is
    /// withdrawn (`notifications/cancelled`), so a late answer approves nothing and the client
    /// can close its form.
    async fn ask(
        &self,
        peer: &Peer<RoleServer>,
        tool: &str,
        message: String,
    ) -> Result<ElicitResult, AgentError> {
        let ask = server_request(&confirmation(tool, message))?;
        let sent = peer
            .send_request_with_option(ask, PeerRequestOptions::no_options())
            .await;
        let outcome = match sent {
            Ok(handle) => {
                let withdraw = Withdraw(Some((peer.clone(), handle.id.clone())));
                let outcome = handle.await_response().await;
                // Answered, or failed: nothing left to withdraw.
                withdraw.disarm();
                outcome
            }
            Err(error) => Err(error),
        };
        match outcome {
            Ok(ClientResult::ElicitResult(answer)) => Ok(answer),
            other => {
                if let Err(error) = other {
                    tracing::debug!(%error, tool, "the client could not ask for confirmation");
                }
                // The client could not ask: as if it could not elicit at all.
                Err(AgentError::confirmation_required(tool))
            }
        }
    }
}

/// Withdraws a question still open when the call stops waiting for it (the runtime's approval
/// deadline passed, or the call was cancelled): rmcp forgets the pending request, and the
/// client is told.
struct Withdraw(Option<(Peer<RoleServer>, RequestId)>);

impl Withdraw {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        // Dropped inside the call's task when the runtime stops waiting; without a runtime (the
        // process is ending) there is nobody left to tell.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let withdrawn = CancelledNotificationParam::new(
                    Some(id),
                    Some("the call no longer waits for this answer".to_owned()),
                );
                let notification = ServerNotification::CancelledNotification(
                    CancelledNotification::new(withdrawn),
                );
                let _ = peer.send_notification(notification).await;
            });
        }
    }
}
