//! One request's round trip, shared by its asker and its approver: requests to the client on
//! a 2025-11-25 session, the answers of the retry and its verified state on 2026-07-28.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use rmcp::{
    Peer, RoleServer,
    model::{ClientCapabilities, RequestStateError},
};
use serde_json::Value;

use crate::sync::lock;

use super::{
    states::{StateId, States},
    waiting::Waiting,
};

/// One request's round trip.
pub(crate) struct Round {
    pub(super) principal: Option<String>,
    /// Whether the human in front of the client may confirm this call: the server lets it,
    /// and the client can put a form to its user.
    pub(super) confirms: bool,
    pub(super) channel: Channel,
}

pub(super) enum Channel {
    /// Requests to the client, awaited in the call.
    Legacy {
        peer: Peer<RoleServer>,
        /// The calls waiting for their users, every connection's.
        waiting: Arc<Mutex<Waiting>>,
    },
    /// Answers from the client's retry; questions still open end the request.
    Modern(Modern),
}

pub(super) struct Modern {
    pub(super) states: Arc<States>,
    /// What the request's `_meta` says the client can answer.
    pub(super) capabilities: ClientCapabilities,
    /// What the next state is bound to: this request.
    pub(super) binding: Vec<u8>,
    /// The verified state this request came back with, by name (to redeem it once).
    pub(super) state: Option<StateId>,
    /// Every answer the client sent (state and this round), by key.
    pub(super) known: BTreeMap<String, Value>,
    /// The answers taken so far (the tool's, the confirmation): what the next state carries.
    pub(super) carried: Mutex<BTreeMap<String, Value>>,
}

impl Modern {
    /// A state for the next round, carrying the answers taken so far.
    pub(super) fn seal(&self) -> Result<String, RequestStateError> {
        let carried = lock(&self.carried).clone();
        self.states.seal(&carried, &self.binding)
    }
}

impl Round {
    pub(super) fn new(principal: Option<&str>, confirms: bool, channel: Channel) -> Arc<Self> {
        Arc::new(Self {
            principal: principal.map(str::to_owned),
            confirms,
            channel,
        })
    }
}
