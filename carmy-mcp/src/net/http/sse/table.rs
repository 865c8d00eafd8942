//! The open legacy sessions: who owns each, where its messages go, and the calls in flight on
//! it (so that an answer ends its call's deadline).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
};

use rmcp::model::{ClientJsonRpcMessage, RequestId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::super::sessions::Ticket;

/// One open session.
pub(super) struct Session {
    /// The principal that opened it (`None`: a context naming none).
    pub(super) owner: Option<Arc<str>>,
    /// Into rmcp's session.
    pub(super) inbound: mpsc::Sender<ClientJsonRpcMessage>,
    /// Cancelled when the session closes.
    pub(super) closed: CancellationToken,
    /// The requests being answered, each with the token that cancels its call.
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Its place within the bounds on sessions, given back when the session is dropped.
    _ticket: Ticket,
}

impl Session {
    pub(super) fn new(
        owner: Option<Arc<str>>,
        inbound: mpsc::Sender<ClientJsonRpcMessage>,
        ticket: Ticket,
    ) -> Self {
        Self {
            owner,
            inbound,
            closed: CancellationToken::new(),
            in_flight: Mutex::default(),
            _ticket: ticket,
        }
    }

    /// Notes a request being answered, with what cancels it.
    pub(super) fn begin(&self, id: RequestId, cancel: CancellationToken) {
        lock(&self.in_flight).insert(id, cancel);
    }

    /// The answer to `id` is sent: its deadline is over.
    pub(super) fn answered(&self, id: &RequestId) {
        if let Some(cancel) = lock(&self.in_flight).remove(id) {
            cancel.cancel();
        }
    }
}

/// The open sessions by id.
#[derive(Default)]
pub(in crate::net::http) struct Table {
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain maps; a panic elsewhere leaves them usable.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
