//! The open legacy sessions: who owns each, where its messages go, what waits for its client,
//! and its requests in progress.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use rmcp::model::ClientJsonRpcMessage;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::super::sessions::Ticket;
use super::{calls::Calls, outbox::Outbox};
use crate::sync::lock;

/// One open session.
pub(super) struct Session {
    /// The principal that opened it (`None`: a context naming none).
    pub(super) owner: Option<Arc<str>>,
    /// Into rmcp's session.
    pub(super) inbound: mpsc::Sender<ClientJsonRpcMessage>,
    /// Cancelled when the session closes.
    pub(super) closed: CancellationToken,
    /// What waits for its client to read its stream.
    pub(super) outbox: Arc<Outbox>,
    /// Its requests in progress.
    pub(super) calls: Calls,
    /// Its place within the bounds on sessions, given back when the session is dropped.
    _ticket: Ticket,
}

impl Session {
    /// A session whose stream may hold `max_outbox_bytes`.
    pub(super) fn new(
        owner: Option<Arc<str>>,
        inbound: mpsc::Sender<ClientJsonRpcMessage>,
        max_outbox_bytes: usize,
        ticket: Ticket,
    ) -> Self {
        let closed = CancellationToken::new();
        Self {
            owner,
            inbound,
            outbox: Arc::new(Outbox::new(max_outbox_bytes, closed.clone())),
            closed,
            calls: Calls::default(),
            _ticket: ticket,
        }
    }
}

/// The open sessions by id.
#[derive(Default)]
pub(in crate::transport::http) struct Table {
    open: Mutex<HashMap<String, Arc<Session>>>,
}

impl Table {
    pub(super) fn insert(&self, id: String, session: Arc<Session>) {
        lock(&self.open).insert(id, session);
    }

    /// Session `id` if it is open and `principal`'s; to any other principal it does not exist.
    pub(super) fn get(&self, id: &str, principal: Option<&str>) -> Option<Arc<Session>> {
        lock(&self.open)
            .get(id)
            .filter(|session| session.owner.as_deref() == principal)
            .cloned()
    }

    /// Closes session `id`: its calls are cancelled, and rmcp's session ends with its input.
    pub(super) fn close(&self, id: &str) {
        let removed = lock(&self.open).remove(id);
        if let Some(session) = removed {
            session.closed.cancel();
        }
    }
}
