//! Sessions of streamable HTTP: rmcp's in-memory sessions, counted in all and per principal,
//! bound to the principal that opened them, and closed once idle.
//!
//! [`Sessions`] is the [`SessionManager`] rmcp's service is given; it delegates the protocol
//! work to rmcp's [`LocalSessionManager`] and keeps, beside it, who owns each session and what
//! is in progress there. The request guard (`guard.rs`) is what refuses: before rmcp sees an
//! `initialize`, it [reserves](Sessions::reserve) a place for the principal, and the
//! reservation travels with the request into [`initialize_session`] (in the request's
//! `http::request::Parts`, which rmcp hands over with the message), where it becomes the
//! session's owner. A request naming a session is let through only for its owner
//! ([`enter`](Sessions::enter)).
//!
//! Why not rmcp's own idle timer (`SessionConfig::keep_alive`): it counts messages, so it
//! closes a session whose client is listening on its stream, or whose only call runs quietly
//! for longer than the timeout; here a session is idle only when nothing is in progress on it.
//!
//! [`initialize_session`]: SessionManager::initialize_session

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures_util::Stream;
use rmcp::{
    model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage},
    transport::streamable_http_server::session::{
        ServerSseMessage, SessionId, SessionManager,
        local::{LocalSessionManager, LocalSessionManagerError},
    },
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// The bounds on sessions.
#[derive(Clone, Copy, Debug)]
pub(super) struct SessionLimits {
    /// Sessions open at once, all principals together.
    pub(super) max_sessions: usize,
    /// Sessions open at once per principal.
    pub(super) max_per_principal: usize,
    /// How long a session with nothing in progress stays open.
    pub(super) idle_timeout: Duration,
}

/// Who a session belongs to: the principal of the context that opened it, `None` when that
/// context names none (then every caller without one shares it).
type Owner = Option<Arc<str>>;

/// Why a session cannot be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Full {
    /// The server holds its maximum of sessions.
    Server { max: usize },
    /// The principal holds its maximum.
    Principal { max: usize },
}

/// What a request may do on the session it names.
pub(super) enum Entered {
    /// No such session here: rmcp answers (`404`).
    Unknown,
    /// The session is another principal's; to this one it does not exist.
    NotYours,
    /// The session's standalone stream is already open.
    StreamOpen,
    /// The owner's request; the session is busy until this is dropped.
    Active(Activity),
}

/// What a `GET` on a session opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Visit {
    /// A `POST` or `DELETE`: one exchange.
    Request,
    /// The session's standalone stream (`GET`), one at a time.
    Stream,
}

/// rmcp's sessions, with their owners and bounds.
pub(super) struct Sessions {
    inner: LocalSessionManager,
    limits: SessionLimits,
    table: Arc<Mutex<Table>>,
    /// Ends the idle reaper (the server is shutting down).
    stop: CancellationToken,
    reaping: AtomicBool,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("limits", &self.limits)
            .field("open", &lock(&self.table).live.len())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Table {
    /// Places taken, by open sessions and by `initialize` requests on their way.
    held: usize,
    held_by: HashMap<Owner, usize>,
    live: HashMap<SessionId, Live>,
}

/// One of rmcp's sessions.
struct Live {
    /// The place its `initialize` reserved: its owner. `None` until then, when it is nobody's.
    ticket: Option<Ticket>,
    /// Requests in progress on it, its standalone stream included.
    busy: usize,
    /// Whether its standalone stream is open.
    streaming: bool,
    last_active: Instant,
}

impl Sessions {
    pub(super) fn new(limits: SessionLimits, stop: CancellationToken) -> Self {
        let mut inner = LocalSessionManager::default();
        // Idleness is decided here (see the module docs); rmcp's timer would close busy sessions.
        inner.session_config.keep_alive = None;
        Self {
            inner,
            limits,
            table: Arc::default(),
            stop,
            reaping: AtomicBool::new(false),
        }
    }

    /// Takes a place for a session `principal` is opening, or says which bound is reached.
    /// The place is given back when the [`Ticket`] (and the session it becomes) is dropped.
    pub(super) fn reserve(self: &Arc<Self>, principal: Option<&str>) -> Result<Ticket, Full> {
        self.start_reaper();
        let owner: Owner = principal.map(Arc::from);
        let mut table = lock(&self.table);
        if table.held >= self.limits.max_sessions {
            return Err(Full::Server {
                max: self.limits.max_sessions,
            });
        }
        let held = table.held_by.entry(owner.clone()).or_default();
        if *held >= self.limits.max_per_principal {
            return Err(Full::Principal {
                max: self.limits.max_per_principal,
            });
        }
        *held += 1;
        table.held += 1;
        Ok(Ticket(Arc::new(Reservation {
            table: Arc::downgrade(&self.table),
            owner,
        })))
    }

    /// Lets `principal`'s request on session `id` in if the session is its own, and counts it
    /// as in progress there until the returned [`Activity`] is dropped.
    pub(super) fn enter(
        self: &Arc<Self>,
        id: &str,
        principal: Option<&str>,
        visit: Visit,
    ) -> Entered {
        let mut table = lock(&self.table);
        let Some((id, _)) = table.live.get_key_value(id) else {
            return Entered::Unknown;
        };
        let id = id.clone();
        let live = table.live.get_mut(&id).expect("just found");
        let owned = live
            .ticket
            .as_ref()
            .is_some_and(|ticket| ticket.0.owner.as_deref() == principal);
        if !owned {
            return Entered::NotYours;
        }
        if visit == Visit::Stream {
            if live.streaming {
                return Entered::StreamOpen;
            }
            live.streaming = true;
        }
        live.busy += 1;
        live.last_active = Instant::now();
        Entered::Active(Activity {
            sessions: Arc::downgrade(self),
            id,
            visit,
        })
    }

    /// How many sessions are open.
    #[cfg(test)]
    fn open(&self) -> usize {
        lock(&self.table).live.len()
    }

    /// Closes the sessions that have been idle past the timeout, every so often, until the
    /// server stops or drops its sessions. Started with the first session.
    fn start_reaper(self: &Arc<Self>) {
        if self.reaping.swap(true, Ordering::Relaxed) {
            return;
        }
        let sessions = Arc::downgrade(self);
        let stop = self.stop.clone();
        let every = (self.limits.idle_timeout / 4).clamp(REAP_EVERY_MIN, REAP_EVERY_MAX);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                let Some(sessions) = sessions.upgrade() else {
                    return;
                };
                sessions.reap().await;
            }
        });
    }

    async fn reap(&self) {
        let idle: Vec<SessionId> = {
            let table = lock(&self.table);
            table
                .live
                .iter()
                .filter(|(_, live)| {
                    live.ticket.is_some()
                        && live.busy == 0
                        && live.last_active.elapsed() >= self.limits.idle_timeout
                })
                .map(|(id, _)| id.clone())
                .collect()
        };
        for id in idle {
            tracing::debug!(session = %id, "closing an idle session");
            if let Err(error) = self.close_session(&id).await {
                tracing::warn!(session = %id, %error, "closing an idle session failed");
            }
        }
    }

    fn forget(&self, id: &SessionId) {
        let removed = lock(&self.table).live.remove(id);
        // Dropped outside the lock: the session's ticket gives its place back through it.
        drop(removed);
    }
}

/// How often idle sessions are looked for: a quarter of the idle timeout, within these.
const REAP_EVERY_MIN: Duration = Duration::from_millis(50);
const REAP_EVERY_MAX: Duration = Duration::from_secs(15);

/// A place held for a session: by an `initialize` on its way, then by the session it opened.
/// Carried in the request's extensions, hence `Clone`; the place is given back when the last
/// copy is dropped.
#[derive(Clone, Debug)]
pub(super) struct Ticket(Arc<Reservation>);

#[derive(Debug)]
struct Reservation {
    table: Weak<Mutex<Table>>,
    owner: Owner,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let Some(table) = self.table.upgrade() else {
            return;
        };
        let mut table = lock(&table);
        table.held -= 1;
        if let Some(held) = table.held_by.get_mut(&self.owner) {
            *held -= 1;
            if *held == 0 {
                table.held_by.remove(&self.owner);
            }
        }
    }
}

/// A request in progress on a session (its standalone stream included): the session is not
/// idle while one exists.
#[derive(Debug)]
pub(super) struct Activity {
    sessions: Weak<Sessions>,
    id: SessionId,
    visit: Visit,
}

impl Drop for Activity {
    fn drop(&mut self) {
        let Some(sessions) = self.sessions.upgrade() else {
            return;
        };
        let mut table = lock(&sessions.table);
        if let Some(live) = table.live.get_mut(&self.id) {
            live.busy -= 1;
            if self.visit == Visit::Stream {
                live.streaming = false;
            }
            live.last_active = Instant::now();
        }
    }
}

/// The reservation the request guard attached to an `initialize`.
fn ticket_of(message: &ClientJsonRpcMessage) -> Option<Ticket> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    request
        .request
        .extensions()
        .get::<http::request::Parts>()?
        .extensions
        .get::<Ticket>()
        .cloned()
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// An `initialize` reached the sessions without the guard's reservation.
    #[error("a session was opened without a reservation")]
    Unreserved,
}

impl SessionManager for Sessions {
    type Error = SessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        lock(&self.table).live.insert(
            id.clone(),
            Live {
                ticket: None,
                busy: 0,
                streaming: false,
                last_active: Instant::now(),
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let Some(ticket) = ticket_of(&message) else {
            // Only the guard's requests reach here, and it reserves for every `initialize`
            // that opens a session; a session nobody owns would be anybody's.
            tracing::error!(session = %id, "an initialize without a reservation; closing it");
            let _ = self.close_session(id).await;
            return Err(SessionError::Unreserved);
        };
        let replaced = match lock(&self.table).live.get_mut(id) {
            Some(live) => {
                live.last_active = Instant::now();
                live.ticket.replace(ticket)
            }
            // Closed already (the server is stopping): the ticket's place is given back.
            None => Some(ticket),
        };
        // Outside the lock: a ticket dropped gives its place back through it.
        drop(replaced);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.forget(id);
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(max_sessions: usize, max_per_principal: usize) -> Arc<Sessions> {
        Arc::new(Sessions::new(
            SessionLimits {
                max_sessions,
                max_per_principal,
                idle_timeout: Duration::from_secs(60),
            },
            CancellationToken::new(),
        ))
    }

    #[tokio::test]
    async fn places_are_counted_in_all_and_per_principal_and_given_back() {
        let sessions = sessions(3, 2);
        let alice = [
            sessions.reserve(Some("alice")).expect("first"),
            sessions.reserve(Some("alice")).expect("second"),
        ];
        assert_eq!(
            sessions.reserve(Some("alice")).unwrap_err(),
            Full::Principal { max: 2 }
        );
        let bob = sessions
            .reserve(Some("bob"))
            .expect("bob has his own share");
        assert_eq!(sessions.reserve(None).unwrap_err(), Full::Server { max: 3 });
        drop(bob);
        let anonymous = sessions.reserve(None).expect("a place was given back");
        drop((alice, anonymous));
        let table = lock(&sessions.table);
        assert_eq!(table.held, 0);
        assert!(table.held_by.is_empty());
    }

    #[tokio::test]
    async fn a_session_is_entered_by_its_owner_only_and_one_stream_at_a_time() {
        let sessions = sessions(8, 8);
        let (id, _transport) = sessions.create_session().await.expect("created");
        assert!(
            matches!(
                sessions.enter(&id, Some("alice"), Visit::Request),
                Entered::NotYours
            ),
            "nobody's until initialized"
        );
        let ticket = sessions.reserve(Some("alice")).expect("a place");
        lock(&sessions.table)
            .live
            .get_mut(&id)
            .expect("live")
            .ticket = Some(ticket);
        assert!(matches!(
            sessions.enter(&id, Some("bob"), Visit::Request),
            Entered::NotYours
        ));
        assert!(matches!(
            sessions.enter(&id, None, Visit::Stream),
            Entered::NotYours
        ));
        assert!(matches!(
            sessions.enter("no-such-id", Some("alice"), Visit::Request),
            Entered::Unknown
        ));
        let Entered::Active(stream) = sessions.enter(&id, Some("alice"), Visit::Stream) else {
            panic!("the owner's stream");
        };
        assert!(matches!(
            sessions.enter(&id, Some("alice"), Visit::Stream),
            Entered::StreamOpen
        ));
        let Entered::Active(request) = sessions.enter(&id, Some("alice"), Visit::Request) else {
            panic!("the owner's request");
        };
        assert_eq!(lock(&sessions.table).live[&id].busy, 2);
        drop((stream, request));
        assert!(matches!(
            sessions.enter(&id, Some("alice"), Visit::Stream),
            Entered::Active(_)
        ));

        sessions.close_session(&id).await.expect("closed");
        assert_eq!(sessions.open(), 0);
        assert_eq!(lock(&sessions.table).held, 0, "its place was given back");
    }
}
