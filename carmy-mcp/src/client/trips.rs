//! The server's side of every round trip: its sealing keys and redeemed states, the calls
//! waiting for their users, and whether the human in front of the client may confirm calls.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use carmy_core::Redemptions;
use rmcp::{
    ErrorData, RoleServer,
    model::{ClientCapabilities, InputResponses, ProtocolVersion},
    service::RequestContext,
};
use serde_json::json;

use super::{
    keys::StateKeys,
    round::{Channel, Modern, Round},
    states::{Binding, STATE_TTL, States},
    waiting::Waiting,
};

/// Shared by every clone of the server (every connection), so a state is single-use, and the
/// bounds hold, across them.
pub(crate) struct RoundTrips {
    states: Arc<States>,
    waiting: Arc<Mutex<Waiting>>,
    confirms: bool,
}

impl std::fmt::Debug for RoundTrips {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundTrips")
            .field("confirms", &self.confirms)
            .field("keys", self.states.keys())
            .finish_non_exhaustive()
    }
}

impl RoundTrips {
    /// Round trips whose states, sealed with `keys`, expire after [`STATE_TTL`] and are redeemed
    /// in `redemptions` (the runtime's); confirmation through the client when `confirms`.
    pub(crate) fn new(confirms: bool, keys: StateKeys, redemptions: Redemptions) -> Self {
        Self {
            states: Arc::new(States::new(STATE_TTL, keys, redemptions)),
            waiting: Arc::default(),
            confirms,
        }
    }

    /// Whether the human in front of the client may confirm calls.
    pub(crate) fn confirms(&self) -> bool {
        self.confirms
    }

    /// The same round trips, with confirmation through the client when `confirms`.
    pub(crate) fn confirming(&self, confirms: bool) -> Self {
        Self::new(
            confirms,
            self.keys().clone(),
            self.states.redemptions().clone(),
        )
    }

    /// The same round trips, sealed with `keys`.
    pub(crate) fn sealed_with(&self, keys: StateKeys) -> Self {
        Self::new(self.confirms, keys, self.states.redemptions().clone())
    }

    /// The keys that seal and open states.
    pub(crate) fn keys(&self) -> &StateKeys {
        self.states.keys()
    }

    /// The round trip of one request (a call, a prompt get): the client's answers and the
    /// state of earlier rounds on 2026-07-28, requests to the client before. A state that fails
    /// verification is the request's error.
    pub(crate) fn round(
        &self,
        request: &RequestContext<RoleServer>,
        binding: Binding<'_>,
        input_responses: Option<InputResponses>,
        request_state: Option<&str>,
    ) -> Result<Arc<Round>, ErrorData> {
        let confirms = self.confirms && supports_form(request.client_capabilities().as_ref());
        let modern = request
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        if !modern {
            let channel = Channel::Legacy {
                peer: request.peer.clone(),
                waiting: Arc::clone(&self.waiting),
            };
            return Ok(Round::new(binding.principal, confirms, channel));
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
        let channel = Channel::Modern(Modern {
            states: Arc::clone(&self.states),
            capabilities: request.client_capabilities().unwrap_or_default(),
            binding: bytes,
            state,
            known,
            carried: Mutex::default(),
        });
        Ok(Round::new(binding.principal, confirms, channel))
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
