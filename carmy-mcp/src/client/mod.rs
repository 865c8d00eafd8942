//! One round trip to the client, for everything a request may need from it: a tool's or a
//! prompt's questions ([`ClientAsker`], behind [`carmy_core::Asker`]) and the confirmation of a
//! call the host did not grant ([`ClientApproval`], behind [`carmy_core::Approver`]). A
//! confirmation is a question with a fixed form (`mapping::confirmation_request`), asked under
//! the key [`CONFIRM_INPUT_KEY`](crate::CONFIRM_INPUT_KEY), and travels the same way:
//!
//! - 2025-11-25 (and older) sessions: requests to the client (`elicitation/create`,
//!   `sampling/createMessage`, `roots/list`), awaited in the call ([`Round::Legacy`]).
//! - 2026-07-28: a server may not send requests, so the request ends with an `input_required`
//!   result carrying the questions and a sealed `requestState` ([`states`]); the client retries
//!   with the answers in `inputResponses` and echoes the state ([`Round::Modern`]). The request
//!   runs again and finds each answer under its key: this round's in `inputResponses`, earlier
//!   rounds' (a confirmation among them) in the state. A state that fails verification is
//!   refused (`-32602`) before anything runs; answers nobody asked for are ignored; an answer
//!   of the wrong shape is asked again.
//!
//! A question the client declared no capability for is not asked: a tool can tell beforehand
//! ([`Context::can_ask`](carmy_core::Context::can_ask)), and asking anyway fails with
//! `CANNOT_ASK`; a confirmation the client cannot put to its user is `CONFIRMATION_REQUIRED`,
//! as without confirmation through the client.
//!
//! What a client can make the server hold, and for how long, is bounded: a call waiting for its
//! user's confirmation (2025-11-25) by [`waiting`]; a question in flight (2026-07-28) holds
//! nothing, its state travels with the client; redeemed states by [`redeemed`].

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use rmcp::{
    ErrorData, Peer, RoleServer,
    model::{ClientCapabilities, InputResponses, ProtocolVersion},
    service::RequestContext,
};
use serde_json::{Value, json};

mod approval;
mod asker;
mod question;
mod redeemed;
mod states;
mod waiting;

pub(crate) use approval::ClientApproval;
pub(crate) use asker::ClientAsker;
pub(crate) use states::Binding;
use states::{STATE_TTL, StateId, States, lock};
use waiting::{Crowded, Waiting, WaitingPlace};

/// The server's side of every round trip: its sealing key and redeemed states, the calls
/// waiting for their users, and whether the human in front of the client may confirm calls.
/// Shared by every clone of the server (every connection), so a state is single-use, and the
/// bounds hold, across them.
pub(crate) struct RoundTrips {
    states: States,
    waiting: Mutex<Waiting>,
    confirms: bool,
}

impl std::fmt::Debug for RoundTrips {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundTrips")
            .field("confirms", &self.confirms)
            .finish_non_exhaustive()
    }
}

impl RoundTrips {
    /// Round trips whose states expire after [`STATE_TTL`]; confirmation through the client
    /// when `confirms`.
    pub(crate) fn new(confirms: bool) -> Self {
        Self {
            states: States::new(STATE_TTL),
            waiting: Mutex::default(),
            confirms,
        }
    }

    /// Whether the human in front of the client may confirm calls.
    pub(crate) fn confirms(&self) -> bool {
        self.confirms
    }

    /// The same round trips, with confirmation through the client on or off.
    pub(crate) fn confirming(&self, confirms: bool) -> Self {
        Self {
            states: States::new(self.states.ttl()),
            waiting: Mutex::default(),
            confirms,
        }
    }

    /// The round trip of one request (a call, a prompt get): the client's answers and the
    /// state of earlier rounds on 2026-07-28, requests to the client before. A state that fails
    /// verification is the request's error.
    pub(crate) fn round(
        self: &Arc<Self>,
        request: &RequestContext<RoleServer>,
        binding: Binding<'_>,
        input_responses: Option<InputResponses>,
        request_state: Option<&str>,
    ) -> Result<Arc<Round>, ErrorData> {
        let form = supports_form(request.client_capabilities().as_ref());
        let modern = request
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        if !modern {
            return Ok(Arc::new(Round {
                principal: binding.principal.map(str::to_owned),
                form,
                channel: Channel::Legacy {
                    peer: request.peer.clone(),
                    trips: Arc::clone(self),
                },
            }));
        }
        let bytes = binding.bytes();
        let (state, mut known) = match request_state {
            Some(state) => {
                let opened = self.states.open(state, &bytes).map_err(refused)?;
                (Some(opened.id), opened.answers)
            }
            None => (None, BTreeMap::new()),
        };
        known.extend(input_responses.unwrap_or_default());
        Ok(Arc::new(Round {
            principal: binding.principal.map(str::to_owned),
            form,
            channel: Channel::Modern(Modern {
                trips: Arc::clone(self),
                capabilities: request.client_capabilities().unwrap_or_default(),
                binding: bytes,
                state,
                known,
                carried: Mutex::default(),
            }),
        }))
    }

    /// A place among the calls waiting for their users, for a call of `principal`'s whose
    /// arguments weigh `bytes`; freed when dropped.
    fn wait(
        self: &Arc<Self>,
        principal: Option<&str>,
        bytes: usize,
    ) -> Result<WaitingPlace, Crowded> {
        lock(&self.waiting).take(principal, bytes)?;
        Ok(WaitingPlace {
            trips: Arc::clone(self),
            principal: principal.map(str::to_owned),
            bytes,
        })
    }
}

/// One request's round trip, shared by its asker and its approver.
pub(crate) struct Round {
    principal: Option<String>,
    /// Whether the client can put a form to its user (a confirmation).
    form: bool,
    channel: Channel,
}

enum Channel {
    /// Requests to the client, awaited in the call.
    Legacy {
        peer: Peer<RoleServer>,
        trips: Arc<RoundTrips>,
    },
    /// Answers from the client's retry; questions still open end the request.
    Modern(Modern),
}

struct Modern {
    trips: Arc<RoundTrips>,
    /// What the request's `_meta` says the client can answer.
    capabilities: ClientCapabilities,
    /// What the next state is bound to: this request.
    binding: Vec<u8>,
    /// The verified state this request came back with, by name (to redeem it once).
    state: Option<StateId>,
    /// Every answer the client sent (state and this round), by key.
    known: BTreeMap<String, Value>,
    /// The answers taken so far (the tool's, the confirmation): what the next state carries.
    carried: Mutex<BTreeMap<String, Value>>,
}

impl Modern {
    /// A state for the next round, carrying the answers taken so far.
    fn seal(&self) -> Result<String, rmcp::model::RequestStateError> {
        let carried = lock(&self.carried).clone();
        self.trips.states.seal(&carried, &self.binding)
    }
}

impl Round {
    /// The asker of this request's tool or prompt.
    pub(crate) fn asker(self: &Arc<Self>) -> ClientAsker {
        ClientAsker::new(Arc::clone(self))
    }

    /// The approver of this call, when the server lets the human confirm calls and the client
    /// can put a form to its user; `None` otherwise, and the runtime answers
    /// `CONFIRMATION_REQUIRED` as without this feature.
    pub(crate) fn approver(self: &Arc<Self>) -> Option<ClientApproval> {
        let trips = match &self.channel {
            Channel::Legacy { trips, .. } => trips,
            Channel::Modern(modern) => &modern.trips,
        };
        (trips.confirms && self.form).then(|| ClientApproval::new(Arc::clone(self)))
    }
}

/// A state that failed verification, as the request's error.
fn refused(reason: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("`requestState` is not valid: {reason}"),
        Some(json!({ "field": "requestState" })),
    )
}

/// Form elicitation, stated either way a client may declare it (an empty `elicitation: {}` means
/// form, for clients of 2025-06-18).
fn supports_form(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|capabilities| capabilities.elicitation.as_ref())
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use waiting::{MAX_WAITING, MAX_WAITING_PER_PRINCIPAL};

    #[test]
    fn waiting_calls_are_bounded_per_principal_and_in_all() {
        let trips = Arc::new(RoundTrips::new(true));
        let mb = 1 << 20;
        assert_eq!(
            trips.wait(Some("a"), 17 * mb).err(),
            Some(Crowded::TooLarge { bytes: 17 * mb })
        );
        let places: Vec<_> = (0..MAX_WAITING_PER_PRINCIPAL)
            .map(|_| trips.wait(Some("a"), mb).expect("room"))
            .collect();
        assert_eq!(trips.wait(Some("a"), mb).err(), Some(Crowded::Full));
        // Another principal has its own share.
        let other = trips.wait(Some("b"), 15 * mb).expect("room");
        assert_eq!(trips.wait(Some("b"), 2 * mb).err(), Some(Crowded::Full));
        drop(places);
        drop(other);
        let waiting = lock(&trips.waiting);
        assert_eq!((waiting.all.calls, waiting.all.bytes), (0, 0));
        assert!(waiting.shares.is_empty());
        drop(waiting);
        // In all: many principals, one call each.
        let places: Vec<_> = (0..MAX_WAITING)
            .map(|p| trips.wait(Some(&format!("p{p}")), 1).expect("room"))
            .collect();
        assert_eq!(trips.wait(Some("late"), 1).err(), Some(Crowded::Full));
        drop(places);
        assert!(trips.wait(Some("late"), 1).is_ok());
    }
}
