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
//!
//! A session may run some of its calls on a second service, on a thread of its own
//! (`call_thread.rs`). The ids stay one sequence: this flow gives out both services' request
//! ids and knows which service has each request, so a duplicate is refused, a cancellation
//! reaches the service that runs the call, and the in-flight bound counts both. The second
//! service's own requests to the client go out under negative ids (its peer numbers them from
//! 0, as the first's does), and the client's answers to them go back to it.

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

/// Which service runs a request, or asked the client something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Service {
    /// The session's rmcp service, on the serve loop's thread.
    Loop,
    /// The second service, on the call thread.
    CallThread,
}

/// A request handed to a service and not answered yet.
struct Handed {
    /// The client's id, written in the answer's place.
    id: ClientId,
    service: Service,
    run: Run,
}

/// Where a request of the call thread's is. A cancelled one keeps its place in flight until its
/// handler has ended: the loop hands the runtime a waiting request as soon as a place is free,
/// and on one thread the cancelled call always ends first (its task was woken first), while on
/// the call thread it ends whenever that thread gets to it. Counted until then, the runtime
/// never holds more executions than the in-flight bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    /// Its handler runs.
    Running,
    /// Its handler ended; its answer is on its way.
    Ended,
    /// The client cancelled it while its handler ran; its id is free already.
    Cancelled,
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
    /// Requests handed to rmcp and not answered yet, by our id.
    in_flight: HashMap<i64, Handed>,
    /// How many of them the call thread has.
    on_call_thread: usize,
    pub(super) max_in_flight: usize,
    /// Requests read while `in_flight` was full, in arrival order. Reading goes on while they
    /// wait, so that cancellations and answers still get through, until there are
    /// `max_in_flight` of them or `max_waiting_bytes` of their lines (at least one).
    waiting: VecDeque<Box<Incoming>>,
    waiting_bytes: usize,
    max_waiting_bytes: usize,
    /// The ids of the server's requests the client has not answered (as written on the wire:
    /// the call thread's are negative), oldest first.
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
            on_call_thread: 0,
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

    /// Requests unanswered that the call thread has.
    pub(super) fn on_call_thread(&self) -> usize {
        self.on_call_thread
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
        request.id = RequestId::Number(self.hand(id, Service::Loop));
        JsonRpcMessage::Request(request)
    }

    /// Records the request `id` as handed to `service` under a new id of ours, returned.
    fn hand(&mut self, id: ClientId, service: Service) -> i64 {
        let ours = self.next_id;
        self.next_id += 1;
        tracing::trace!(id = %id.for_log(), ours, ?service, "request handed over");
        self.by_client
            .insert(id.key().clone(), Slot::InFlight(ours));
        self.in_flight.insert(
            ours,
            Handed {
                id,
                service,
                run: Run::Running,
            },
        );
        if service == Service::CallThread {
            self.on_call_thread += 1;
        }
        ours
    }

    /// Forgets the request `ours` as in flight.
    fn forget(&mut self, ours: i64) -> Option<Handed> {
        let handed = self.in_flight.remove(&ours)?;
        if handed.service == Service::CallThread {
            self.on_call_thread -= 1;
        }
        Some(handed)
    }

    /// Hands a request (a call or a read whose line the call thread parses) to the call thread
    /// under a new id of ours, when the loop would hand it over now (the call thread runs only
    /// in a session opened with `initialize`). Otherwise the id is given back, and the line
    /// takes the loop's way: to wait for room, or be refused as a duplicate.
    pub(super) fn hand_to_call_thread(&mut self, id: ClientId) -> Result<i64, ClientId> {
        if self.by_client.contains_key(id.key())
            || self.in_flight.len() >= self.max_in_flight
            || !self.waiting.is_empty()
        {
            return Err(id);
        }
        Ok(self.hand(id, Service::CallThread))
    }

    /// Forgets a request of the call thread's that it answered itself (its line was not a call
    /// after all): the client's id, to answer with, unless a cancel came first.
    pub(super) fn release(&mut self, ours: i64) -> Option<ClientId> {
        self.answered(&RequestId::Number(ours))
    }

    /// A `notifications/cancelled` naming `id`: a waiting request is dropped (and so is the
    /// notification); one in flight is forgotten, since rmcp drops its answer, and the
    /// notification goes on, naming it by our id, to the service that runs it. One naming no
    /// request is dropped.
    pub(super) fn cancel(
        &mut self,
        message: ClientJsonRpcMessage,
        id: Option<&ClientId>,
    ) -> Option<(ClientJsonRpcMessage, Service)> {
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
                let handed = self.in_flight.get_mut(&ours)?;
                let service = handed.service;
                if service == Service::CallThread && handed.run == Run::Running {
                    handed.run = Run::Cancelled;
                } else {
                    self.forget(ours);
                }
                let JsonRpcMessage::Notification(mut notification) = message else {
                    return None;
                };
                let ClientNotification::CancelledNotification(cancelled) =
                    &mut notification.notification
                else {
                    return None;
                };
                cancelled.params.request_id = Some(RequestId::Number(ours));
                Some((JsonRpcMessage::Notification(notification), service))
            }
        }
    }

    /// The service whose request an answer from the client with `id` answers, and that
    /// request's id as the service knows it; `None` when it answers none. Its id must be exactly
    /// the one the server sent (`0`, not `"0"` or `0.0`). The request is then forgotten.
    pub(super) fn client_answers(&mut self, id: Option<&ClientId>) -> Option<(Service, i64)> {
        let Some(IdKey::Int(id)) = id.map(ClientId::key) else {
            return None;
        };
        let id = i64::try_from(*id).ok()?;
        // `asked_order` keeps the id until it is evicted; a stale entry there is harmless.
        if !self.asked.remove(&id) {
            return None;
        }
        Some(if id < 0 {
            (Service::CallThread, call_thread_id(id))
        } else {
            (Service::Loop, id)
        })
    }

    /// Notes what `service` sends, and returns the client's id of the request it answers (or
    /// of the subscription it belongs to), to write in its place. The call thread's requests to
    /// the client, and its cancellations of them, are renumbered to their negative wire ids.
    pub(super) fn sending(
        &mut self,
        message: &mut ServerJsonRpcMessage,
        service: Service,
    ) -> Option<ClientId> {
        match message {
            JsonRpcMessage::Response(response) => self.answered(&response.id),
            JsonRpcMessage::Error(error) => self.answered(error.id.as_ref()?),
            JsonRpcMessage::Request(request) => {
                if let RequestId::Number(id) = &mut request.id {
                    if service == Service::CallThread {
                        *id = call_thread_id(*id);
                    }
                    self.ask(*id);
                }
                None
            }
            JsonRpcMessage::Notification(notification) => {
                if let ServerNotification::CancelledNotification(cancelled) =
                    &mut notification.notification
                    && let Some(RequestId::Number(id)) = &mut cancelled.params.request_id
                {
                    if service == Service::CallThread {
                        *id = call_thread_id(*id);
                    }
                    // The server gave up on its request: an answer to it is no longer one.
                    self.asked.remove(id);
                }
                let RequestId::Number(ours) =
                    notification.notification.get_meta().subscription_id()?
                else {
                    return None;
                };
                self.in_flight
                    .get(&ours)
                    .filter(|handed| handed.run != Run::Cancelled)
                    .map(|handed| handed.id.clone())
            }
        }
    }

    /// The handler of the call thread's request `ours` ended (answered, failed or stopped). A
    /// cancelled one is then forgotten: `true` when that made room.
    pub(super) fn call_ended(&mut self, ours: i64) -> bool {
        let Some(handed) = self.in_flight.get_mut(&ours) else {
            return false;
        };
        match handed.run {
            Run::Running => {
                handed.run = Run::Ended;
                false
            }
            Run::Cancelled => {
                self.forget(ours);
                true
            }
            Run::Ended => false,
        }
    }

    fn answered(&mut self, id: &RequestId) -> Option<ClientId> {
        let RequestId::Number(ours) = id else {
            return None;
        };
        let Handed { id, run, .. } = self.forget(*ours)?;
        if run == Run::Cancelled {
            // Its id was freed at the cancel, and may name a new request already.
            return None;
        }
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

/// The call thread's request `id` as written to the client, and back: `-1 - id`, so that the
/// two services' requests (both numbered from 0 by rmcp) never share an id.
fn call_thread_id(id: i64) -> i64 {
    -1 - id
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

#[cfg(test)]
mod tests {
    use rmcp::model::{CancelledNotification, CancelledNotificationParam};
    use serde_json::value::RawValue;

    use super::*;

    fn id(json: &str) -> ClientId {
        ClientId::new(&RawValue::from_string(json.to_owned()).unwrap()).unwrap()
    }

    fn cancel(flow: &mut Flow, json: &str) -> Option<Service> {
        let message = ClientJsonRpcMessage::notification(
            CancelledNotification::new(CancelledNotificationParam::new(None, None)).into(),
        );
        flow.cancel(message, Some(&id(json)))
            .map(|(_, service)| service)
    }

    fn open_flow() -> Flow {
        let mut flow = Flow::new(8, 1 << 20);
        flow.lifecycle = Lifecycle::Initialize;
        flow
    }

    #[test]
    fn a_cancelled_call_of_the_call_thread_holds_its_place_until_its_handler_ends() {
        let mut flow = open_flow();
        let ours = flow.hand_to_call_thread(id("1")).unwrap();
        assert_eq!(flow.in_flight(), 1);
        assert_eq!(cancel(&mut flow, "1"), Some(Service::CallThread));
        // Its id is free at once; its place is not.
        let again = flow.hand_to_call_thread(id("1")).unwrap();
        assert_eq!(flow.in_flight(), 2);
        assert_eq!(flow.on_call_thread(), 2);
        // An answer crossing the cancel is dropped, and does not free the new request's id.
        assert!(flow.call_ended(ours));
        assert_eq!(flow.in_flight(), 1);
        assert!(
            flow.hand_to_call_thread(id("1")).is_err(),
            "1 is in flight again"
        );
        let mut answer = ServerJsonRpcMessage::response(
            rmcp::model::ServerResult::empty(()),
            RequestId::Number(ours),
        );
        assert!(flow.sending(&mut answer, Service::CallThread).is_none());
        // The new request ends and is answered as usual.
        assert!(!flow.call_ended(again));
        let mut answer = ServerJsonRpcMessage::response(
            rmcp::model::ServerResult::empty(()),
            RequestId::Number(again),
        );
        let written = flow.sending(&mut answer, Service::CallThread).unwrap();
        assert_eq!(written.raw().get(), "1");
        assert_eq!((flow.in_flight(), flow.on_call_thread()), (0, 0));
    }

    #[test]
    fn a_cancel_after_the_handler_ended_frees_the_place_at_once() {
        let mut flow = open_flow();
        let ours = flow.hand_to_call_thread(id("\"a\"")).unwrap();
        assert!(!flow.call_ended(ours));
        assert_eq!(cancel(&mut flow, "\"a\""), Some(Service::CallThread));
        assert_eq!((flow.in_flight(), flow.on_call_thread()), (0, 0));
        // Its answer, should rmcp still send it, goes nowhere.
        let mut answer = ServerJsonRpcMessage::response(
            rmcp::model::ServerResult::empty(()),
            RequestId::Number(ours),
        );
        assert!(flow.sending(&mut answer, Service::CallThread).is_none());
    }

    #[test]
    fn the_call_threads_questions_go_out_under_ids_of_their_own() {
        let mut flow = open_flow();
        let mut question = ServerJsonRpcMessage::request(
            rmcp::model::ServerRequest::PingRequest(Default::default()),
            RequestId::Number(0),
        );
        flow.sending(&mut question, Service::CallThread);
        let JsonRpcMessage::Request(request) = &question else {
            unreachable!()
        };
        assert_eq!(request.id, RequestId::Number(-1));
        let mut loops = ServerJsonRpcMessage::request(
            rmcp::model::ServerRequest::PingRequest(Default::default()),
            RequestId::Number(0),
        );
        flow.sending(&mut loops, Service::Loop);
        assert_eq!(
            flow.client_answers(Some(&id("-1"))),
            Some((Service::CallThread, 0))
        );
        assert_eq!(
            flow.client_answers(Some(&id("0"))),
            Some((Service::Loop, 0))
        );
        assert_eq!(flow.client_answers(Some(&id("-1"))), None, "answered once");
    }
}
