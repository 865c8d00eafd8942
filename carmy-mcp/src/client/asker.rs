//! The asker of one request: a tool's or a prompt's questions to the client, as requests
//! awaited in the call (2025-11-25) or as an `input_required` answer whose retry brings the
//! answers (2026-07-28).

use std::{collections::BTreeMap, sync::Arc};

use carmy_core::{AgentError, Answers, AskKind, Asked, Asker, Asks, Pending};
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use crate::sync::lock;

use super::round::{Channel, Round};
use crate::mapping::{answers, server_request};

/// Puts one request's questions to its client.
pub(crate) struct ClientAsker {
    round: Arc<Round>,
}

impl ClientAsker {
    /// The asker of the request `round` belongs to.
    pub(crate) fn new(round: &Arc<Round>) -> Self {
        Self {
            round: Arc::clone(round),
        }
    }
}

impl Asker for ClientAsker {
    fn can_ask(&self, kind: AskKind) -> bool {
        let initialized;
        let capabilities = match &self.round.channel {
            Channel::Modern(modern) => &modern.capabilities,
            // What the client can answer is read from its `initialize` when a tool asks, never
            // copied for a call that does not.
            Channel::Legacy { peer, .. } => match peer.peer_info() {
                Some(info) => {
                    initialized = info;
                    &initialized.capabilities
                }
                None => return false,
            },
        };
        match kind {
            AskKind::Input => capabilities
                .elicitation
                .as_ref()
                .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none()),
            AskKind::Sample => capabilities.sampling.is_some(),
            AskKind::Roots => capabilities.roots.is_some(),
            _ => false,
        }
    }

    async fn ask(&self, asks: &Asks) -> Asked {
        let modern = match &self.round.channel {
            Channel::Legacy { peer, .. } => return ask_in_call(peer, asks).await,
            Channel::Modern(modern) => modern,
        };
        let mut open = Asks::new();
        let mut answered = BTreeMap::new();
        {
            let mut carried = lock(&modern.carried);
            for (key, ask) in asks.iter() {
                match modern.known.get(key).filter(|answer| answers(ask, answer)) {
                    Some(answer) => {
                        carried.insert(key.to_owned(), answer.clone());
                        answered.insert(key.to_owned(), answer.clone());
                    }
                    None => open = open.with(key, ask.clone()),
                }
            }
        }
        if open.is_empty() {
            return Asked::Answered(Answers::new(answered));
        }
        match modern.seal() {
            Ok(state) => Asked::Later(Pending::new(open, Some(state))),
            Err(error) => Asked::Refused(AgentError::internal(format!(
                "the questions' state could not be sealed: {error}"
            ))),
        }
    }
}

/// Sends each question to the client and awaits its answer.
async fn ask_in_call(peer: &Peer<RoleServer>, asks: &Asks) -> Asked {
    let mut answers = BTreeMap::new();
    for (key, ask) in asks.iter() {
        let request = match server_request(ask) {
            Ok(request) => request,
            Err(error) => return Asked::Refused(error),
        };
        match peer.send_request(request).await {
            Ok(answer) => {
                answers.insert(
                    key.to_owned(),
                    serde_json::to_value(answer).unwrap_or(Value::Null),
                );
            }
            Err(error) => {
                return Asked::Refused(AgentError::unavailable(
                    carmy_core::codes::ASK_FAILED,
                    format!("the client did not answer `{key}`: {error}"),
                ));
            }
        }
    }
    Asked::Answered(Answers::new(answers))
}
