//! The requests a session has in flight: which ones rmcp still has to answer and under which
//! id, the requests waiting for room, the server's own requests the client has to answer, and
//! which lifecycle the session follows.
//!
//! rmcp matches an answer to its request by id alone, and forgets a request as soon as it is
//! cancelled. A client may then reuse the id at once (JSON-RPC only forbids it while the request
//! is in flight), and the old call's answer, still on its way, would take the new request's
//! place: rmcp sends the old answer and stops the new call. So rmcp never sees the client's
//! ids: each request it is handed carries an id of the transport's own, used once, and the
//! answer goes out with the client's id exactly as it was written (`ids.rs`).

use std::collections::{HashMap, HashSet, VecDeque};

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetMeta, JsonRpcMessage,
    ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerNotification,
};

use super::{
    classify::Incoming,
    ids::{ClientId, IdKey},
};

/// The server's requests awaiting the client's answer that are remembered; past this, the
/// oldest is forgotten (its answer, if it ever comes, is then dropped).
const MAX_ASKED: usize = 65_536;

/// How the session began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lifecycle {
    /// Not yet: rmcp is in its initialization loop.
    NotStarted,
    /// With `initialize` (protocol 2025-11-25 and older).
    Initialize,
    /// With a 2026-07-28 request carrying its metadata.
    Inline,
}

/// Where a client's request id is.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Waiting,
    /// Handed to rmcp under this id of ours.
    InFlight(i64),
}

/// What the transport knows of the conversation, from the messages that pass through it.
pub(super) struct Flow {
    lifecycle: Lifecycle,
    /// The next id of ours to hand rmcp; never reused in a session.
    next_id: i64,
    /// The client's ids of the requests in flight or waiting.
    by_client: HashMap<IdKey, Slot>,
    /// Requests handed to rmcp and not answered yet, by our id: the client's.
    in_flight: HashMap<i64, ClientId>,
    pub(super) max_in_flight: usize,
    /// Requests read while `in_flight` was full, in arrival order. Reading goes on while they
    /// wait, so that cancellations and answers still get through, until there are
    /// `max_in_flight` of them or `max_waiting_bytes` of their lines (at least one).
    waiting: VecDeque<Box<Incoming>>,
    waiting_bytes: usize,
    max_waiting_bytes: usize,
    /// The ids of the server's requests the client has not answered, oldest first.
    asked: HashSet<i64>,
    asked_order: VecDeque<i64>,
}

/// What to do with a request read from the client.
#[expect(
    clippy::large_enum_variant,
    reason = "the message moves on to rmcp at once; boxing it would cost an allocation per request"
)]
pub(super) enum Admission {
    /// Hand it to rmcp.
    Now(ClientJsonRpcMessage),
    /// It waits for room; reading goes on.
    Waits,
    /// Its id is already in flight or waiting.
    Duplicate(Box<Incoming>),
}

impl Flow {
    pub(super) fn new(max_in_flight: usize, max_waiting_bytes: usize) -> Self {
        Self {
            lifecycle: Lifecycle::NotStarted,
            next_id: 1,
            by_client: HashMap::new(),
            in_flight: HashMap::new(),
            max_in_flight,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            max_waiting_bytes,
            asked: HashSet::new(),
            asked_order: VecDeque::new(),
        }
    }

    pub(super) fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
    }

    /// Requests unanswered.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Requests waiting for room.
    pub(super) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// No more requests can wait: reading stops until rmcp answers one.
    pub(super) fn is_full(&self) -> bool {
        !self.waiting.is_empty()
            && (self.waiting.len() >= self.max_in_flight
                || self.waiting_bytes >= self.max_waiting_bytes)
    }

    /// The oldest waiting request, handed to rmcp, when there is room for it now.
    pub(super) fn next_waiting(&mut self) -> Option<ClientJsonRpcMessage> {
        if self.in_flight.len() >= self.max_in_flight {
            return None;
        }
        let incoming = self.waiting.pop_front()?;
        self.waiting_bytes -= incoming.bytes;
        Some(self.hand_over(incoming))
    }

    /// A request from the client: handed to rmcp now, kept waiting (behind the ones already
    /// waiting), or refused as a duplicate.
    pub(super) fn request(&mut self, incoming: Box<Incoming>) -> Admission {
        let Some(id) = &incoming.id else {
            unreachable!("classify gives every request its id")
        };
        if self.by_client.contains_key(id.key()) {
            return Admission::Duplicate(incoming);
        }
        if self.in_flight.len() < self.max_in_flight && self.waiting.is_empty() {
            return Admission::Now(self.hand_over(incoming));
        }
        self.by_client.insert(id.key().clone(), Slot::Waiting);
        self.waiting_bytes += incoming.bytes;
        self.waiting.push_back(incoming);
        Admission::Waits
    }

    /// Gives `incoming` (a request) an id of ours and hands it over.
    fn hand_over(&mut self, incoming: Box<Incoming>) -> ClientJsonRpcMessage {
        let Incoming { message, id, .. } = *incoming;
        let JsonRpcMessage::Request(mut request) = message else {
            unreachable!("only requests are handed over")
        };
        let id = id.expect("classify gives every request its id");
        if self.lifecycle == Lifecycle::NotStarted {
            self.lifecycle = match &request.request {
                ClientRequest::InitializeRequest(_) => Lifecycle::Initialize,
                other if opens_session(other) => Lifecycle::Inline,
                _ => Lifecycle::NotStarted,
            };
        }
        let ours = self.next_id;
        self.next_id += 1;
        tracing::trace!(id = %id.for_log(), ours, "request handed over");
        self.by_client
            .insert(id.key().clone(), Slot::InFlight(ours));
        self.in_flight.insert(ours, id);
        request.id = RequestId::Number(ours);
        JsonRpcMessage::Request(request)
    }

    /// A `notifications/cancelled` naming `id`: a waiting request is dropped (and so is the
    /// notification); one in flight is forgotten, since rmcp drops its answer, and the
    /// notification goes on naming it by our id. One naming no request is dropped.
    pub(super) fn cancel(
        &mut self,
        message: ClientJsonRpcMessage,
        id: Option<&ClientId>,
    ) -> Option<ClientJsonRpcMessage> {
        let id = id?;
        match self.by_client.get(id.key()).copied()? {
            Slot::Waiting => {
                self.by_client.remove(id.key());
                let at = self
                    .waiting
                    .iter()
                    .position(|waiting| waiting.id.as_ref().map(ClientId::key) == Some(id.key()))
                    .expect("a waiting id is in the queue");
                let dropped = self.waiting.remove(at).expect("found above");
                self.waiting_bytes -= dropped.bytes;
                tracing::debug!(id = %id.for_log(), "a waiting request was cancelled");
                None
            }
            Slot::InFlight(ours) => {
                self.by_client.remove(id.key());
                self.in_flight.remove(&ours);
                let JsonRpcMessage::Notification(mut notification) = message else {
                    return None;
                };
                let ClientNotification::CancelledNotification(cancelled) =
                    &mut notification.notification
                else {
                    return None;
                };
                cancelled.params.request_id = Some(RequestId::Number(ours));
                Some(JsonRpcMessage::Notification(notification))
            }
        }
    }

    /// Whether an answer from the client with `id` answers a request of the server's: its id
    /// must be exactly the one the server sent (`0`, not `"0"` or `0.0`). It is then forgotten.
    pub(super) fn client_answers(&mut self, id: Option<&ClientId>) -> bool {
        let Some(IdKey::Int(id)) = id.map(ClientId::key) else {
            return false;
        };
        let Ok(id) = i64::try_from(*id) else {
            return false;
        };
        // `asked_order` keeps the id until it is evicted; a stale entry there is harmless.
        self.asked.remove(&id)
    }

    /// Notes what rmcp sends, and returns the client's id of the request it answers (or of the
    /// subscription it belongs to), to write in its place.
    pub(super) fn sending(&mut self, message: &ServerJsonRpcMessage) -> Option<ClientId> {
        match message {
            JsonRpcMessage::Response(response) => self.answered(&response.id),
            JsonRpcMessage::Error(error) => self.answered(error.id.as_ref()?),
            JsonRpcMessage::Request(request) => {
                if let RequestId::Number(id) = request.id {
                    self.ask(id);
                }
                None
            }
            JsonRpcMessage::Notification(notification) => {
                if let ServerNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(RequestId::Number(id)) = cancelled.params.request_id
                {
                    // The server gave up on its request: an answer to it is no longer one.
                    self.asked.remove(&id);
                }
                let RequestId::Number(ours) =
                    notification.notification.get_meta().subscription_id()?
                else {
                    return None;
                };
                self.in_flight.get(&ours).cloned()
            }
        }
    }

    fn answered(&mut self, id: &RequestId) -> Option<ClientId> {
        let RequestId::Number(ours) = id else {
            return None;
        };
        let id = self.in_flight.remove(ours)?;
        self.by_client.remove(id.key());
        Some(id)
    }

    fn ask(&mut self, id: i64) {
        if self.asked.insert(id) {
            self.asked_order.push_back(id);
        }
        while self.asked_order.len() > MAX_ASKED {
            if let Some(oldest) = self.asked_order.pop_front() {
                self.asked.remove(&oldest);
            }
        }
    }
}

/// Whether rmcp leaves its initialization loop on `request`: `initialize`, or a 2026-07-28
/// request (other than `ping` and `server/discover`) carrying the per-request metadata with a
/// version rmcp serves (a server may serve fewer; Carmy's serves them all). Another version is
/// refused there, and the client may still fall back to `initialize`.
fn opens_session(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.protocol_version()
                .is_some_and(|version| ProtocolVersion::KNOWN_VERSIONS.contains(&version))
                && meta
                    .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
        }
    }
}
