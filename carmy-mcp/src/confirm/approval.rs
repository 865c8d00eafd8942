//! The approver of one call: asks the human through the client, by `elicitation/create`
//! (2025-11-25) or an `input_required` answer with a sealed state (2026-07-28).

use std::sync::Arc;

use carmy_core::{AgentError, Approval, ApprovalRequest, Approver, Question};
use rmcp::{
    Peer, RoleServer,
    model::{
        CancelledNotification, CancelledNotificationParam, ClientResult, ElicitResult,
        InputResponses, RequestId, ServerNotification, ServerRequest,
    },
    service::PeerRequestOptions,
};
use serde::Deserialize;

use crate::mapping::{CONFIRM_INPUT_KEY, approves, confirmation_request};

use super::{ClientConfirmation, binding, question::question, waiting::weight};

/// Asks the human in front of the client about one call.
pub(crate) struct ClientApproval {
    pub(super) confirmation: Arc<ClientConfirmation>,
    pub(super) round: Round,
}

/// How this session's client is asked.
pub(super) enum Round {
    /// 2025-11-25 and older: a request to the client, awaited.
    Legacy { peer: Peer<RoleServer> },
    /// 2026-07-28: a question in the answer, and the answer in the retry.
    Modern {
        input_responses: Option<InputResponses>,
        request_state: Option<String>,
    },
}

impl Approver for ClientApproval {
    async fn approve(&self, request: ApprovalRequest<'_>) -> Approval {
        let tool = request.tool().name();
        let principal = request.context().principal();
        let answer = match &self.round {
            Round::Legacy { peer } => {
                // The runtime keeps the arguments while the user is asked: only so many may wait.
                let _place = match self
                    .confirmation
                    .wait(principal, weight(request.arguments()))
                {
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
            Round::Modern {
                input_responses,
                request_state,
            } => {
                let binding = binding(tool, request.arguments(), principal);
                let Some(state) = request_state else {
                    return match self.confirmation.seal(&binding) {
                        Ok(state) => Approval::Ask(Question::new(question(&request), state)),
                        Err(error) => {
                            tracing::error!(%error, "cannot seal a confirmation state");
                            Approval::Declined(AgentError::internal("cannot ask for confirmation"))
                        }
                    };
                };
                if let Err(reason) = self.confirmation.redeem(state, &binding, principal) {
                    return Approval::Declined(AgentError::confirmation_invalid(tool, reason));
                }
                let answer = input_responses
                    .as_ref()
                    .and_then(|responses| responses.get(CONFIRM_INPUT_KEY))
                    .and_then(|answer| ElicitResult::deserialize(answer).ok());
                match answer {
                    Some(answer) => answer,
                    None => {
                        return Approval::Declined(AgentError::confirmation_invalid(
                            tool,
                            "the retry carries no answer to the confirmation",
                        ));
                    }
                }
            }
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

impl ClientApproval {
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
        let ask = ServerRequest::ElicitRequest(confirmation_request(tool, message));
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
