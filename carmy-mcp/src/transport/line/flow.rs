//! The requests a session has in flight: which ones rmcp still has to answer, whether the
//! session is open yet, and the request held back while too many are unanswered.

use std::collections::HashSet;

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetMeta, JsonRpcMessage,
    ProtocolVersion, RequestId, ServerJsonRpcMessage,
};

/// What the transport knows of the conversation, from the messages that pass through it.
pub(super) struct Flow {
    /// Whether the session is open (rmcp left its initialization loop); notifications and
    /// responses before that are dropped.
    started: bool,
    /// A legacy (`initialize`) session: there, `notifications/cancelled` makes rmcp drop the
    /// request's answer, so the request stops counting as in flight.
    cancel_drops_answer: bool,
    /// Requests handed to rmcp and not answered yet.
    in_flight: HashSet<RequestId>,
    pub(super) max_in_flight: usize,
    /// A request read while `in_flight` was full, waiting for room. Reading stops while it
    /// waits.
    pub(super) held: Option<Box<ClientJsonRpcMessage>>,
}

impl Flow {
    pub(super) fn new(max_in_flight: usize) -> Self {
        Self {
            started: false,
            cancel_drops_answer: false,
            in_flight: HashSet::new(),
            max_in_flight,
            held: None,
        }
    }

    /// Whether the session is open.
    pub(super) fn started(&self) -> bool {
        self.started
    }

    /// Whether another request may go to rmcp now.
    pub(super) fn has_room(&self) -> bool {
        self.in_flight.len() < self.max_in_flight
    }

    /// Whether a request with `id` is being answered.
    pub(super) fn is_in_flight(&self, id: &RequestId) -> bool {
        self.in_flight.contains(id)
    }

    /// Requests unanswered.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Hands `message` to rmcp, keeping count of the requests it has to answer.
    pub(super) fn admit(&mut self, message: Box<ClientJsonRpcMessage>) -> ClientJsonRpcMessage {
        match &*message {
            JsonRpcMessage::Request(request) => {
                if !self.started && opens_session(&request.request) {
                    self.started = true;
                    self.cancel_drops_answer =
                        matches!(request.request, ClientRequest::InitializeRequest(_));
                }
                self.in_flight.insert(request.id.clone());
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && self.cancel_drops_answer
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.in_flight.remove(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        *message
    }

    /// Notes that rmcp answered, when `message` is an answer.
    pub(super) fn answered(&mut self, message: &ServerJsonRpcMessage) {
        match message {
            JsonRpcMessage::Response(response) => {
                self.in_flight.remove(&response.id);
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.in_flight.remove(id);
                }
            }
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
        }
    }
}

/// Whether rmcp leaves its initialization loop on `request`: `initialize`, or a 2026-07-28
/// request (other than `ping` and `server/discover`) carrying the per-request metadata.
fn opens_session(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.protocol_version().is_some()
                && meta
                    .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
        }
    }
}
