//! Watching resources change: providers report, adapters listen.
//!
//! The seam follows [`ProgressSink`](crate::ProgressSink): a core trait, [`ChangeSink`], that an
//! adapter implements (carmy-mcp turns reports into `notifications/resources/updated` and
//! `notifications/resources/list_changed`), registered with
//! [`Runtime::watch_resources`](crate::Runtime::watch_resources) for as long as the returned
//! [`ResourceWatch`] lives. Providers report through [`ResourceChanges`], which fans out to
//! every sink registered.
//!
//! Providers watch only while someone listens: the first sink starts every provider's watch
//! ([`ResourceProvider::watch`](crate::ResourceProvider::watch)), and dropping the last
//! [`ResourceWatch`] drops what they returned, so a server nobody listens to keeps no watcher.
//!
//! Across replicas, the application's changes travel through a [`ChangeFeed`]: a change one
//! replica's application reports reaches the subscribers of every replica sharing it
//! (PostgreSQL's `LISTEN`/`NOTIFY`, Redis's pub/sub, in `carmy-store`). Only what the application
//! reports ([`Runtime::resource_changes`](crate::Runtime::resource_changes), a tool's
//! [`Context::resource_updated`](crate::Context::resource_updated)) travels: a provider watches
//! for each replica on its own (each replica's watcher sees the files it serves), so its reports
//! stay in the process. A change is a hint to read again, never data, so a feed is best effort:
//! a change published while the feed is away is lost, and a subscriber reads the resource when it
//! next hears of it.

use std::{
    fmt,
    sync::{Arc, Mutex, Weak},
};

use super::provider::ErasedProvider;
use crate::{error::AgentError, resource_change::ResourceChange, sync::lock};

/// Receives changes to resources. Adapters implement it; calls come from whatever thread the
/// provider reports on, so they must be quick (queue, then return).
pub trait ChangeSink: Send + Sync + 'static {
    /// The resource at `uri` changed: a client that subscribed to it may read it again.
    fn updated(&self, uri: &str);

    /// Resources appeared or disappeared: lists are stale.
    fn list_changed(&self);
}

/// How replicas tell each other of the changes their applications report. Set with
/// [`Carmy::change_feed`](crate::Carmy::change_feed); without one, changes stay in the process.
///
/// An implementation publishes without waiting (a change is a hint: queue it, and drop it when
/// the queue is full or the feed is away) and tells a follower every change the *other*
/// replicas publish, never its own (the runtime has told its own subscribers already).
pub trait ChangeFeed: Send + Sync + 'static {
    /// Tells the other replicas of `change`. Called from whatever thread reports it: must not
    /// block.
    fn publish(&self, change: &ResourceChange);

    /// Reports to `changes` every change the other replicas publish, until the returned
    /// [`Watching`] is dropped. The runtime follows while anyone in this process watches its
    /// resources, and its `changes` reach only this process's subscribers.
    fn follow(&self, changes: ResourceChanges) -> Watching;
}

impl<F: ChangeFeed> ChangeFeed for std::sync::Arc<F> {
    fn publish(&self, change: &ResourceChange) {
        (**self).publish(change);
    }

    fn follow(&self, changes: ResourceChanges) -> Watching {
        (**self).follow(changes)
    }
}

/// Where a provider, or the application, reports its changes; cheap to clone. Reports made
/// once nobody listens are dropped. The application's (from
/// [`Runtime::resource_changes`](crate::Runtime::resource_changes)) reach the other replicas
/// too, through the runtime's [`ChangeFeed`]; a provider's stay in the process.
#[derive(Clone)]
pub struct ResourceChanges {
    hub: Weak<Hub>,
    /// Told to the other replicas as well.
    shared: bool,
}

impl ResourceChanges {
    /// The resource at `uri` changed.
    pub fn updated(&self, uri: &str) {
        if let Some(hub) = self.hub.upgrade() {
            for sink in hub.sinks().iter() {
                sink.1.updated(uri);
            }
            if self.shared {
                hub.publish(&ResourceChange::Updated(uri.to_owned()));
            }
        }
    }

    /// Resources appeared or disappeared.
    pub fn list_changed(&self) {
        if let Some(hub) = self.hub.upgrade() {
            for sink in hub.sinks().iter() {
                sink.1.list_changed();
            }
            if self.shared {
                hub.publish(&ResourceChange::ListChanged);
            }
        }
    }

    /// Reports `change`.
    pub fn report(&self, change: &ResourceChange) {
        match change {
            ResourceChange::Updated(uri) => self.updated(uri),
            ResourceChange::ListChanged => self.list_changed(),
        }
    }

    /// A handle that reports nowhere, for testing a provider's watch alone.
    pub fn detached() -> Self {
        Self {
            hub: Weak::new(),
            shared: false,
        }
    }
}

impl fmt::Debug for ResourceChanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceChanges")
            .field("listening", &self.hub.strong_count())
            .field("shared", &self.shared)
            .finish()
    }
}

/// What a provider's watch returns: dropped when the last watcher leaves, which must stop it
/// (a file watcher, a polling task's handle).
#[must_use = "dropping it stops the watch at once"]
pub struct Watching(Option<Box<dyn Send>>);

impl Watching {
    /// Keeps `guard` alive while watching; dropping it stops the watch.
    pub fn new(guard: impl Send + 'static) -> Self {
        Self(Some(Box::new(guard)))
    }

    /// Nothing to stop: the provider reports without a guard, or not at all.
    pub fn none() -> Self {
        Self(None)
    }
}

impl fmt::Debug for Watching {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watching")
            .field("active", &self.0.is_some())
            .finish()
    }
}

/// A sink registered with [`Runtime::watch_resources`](crate::Runtime::watch_resources):
/// reports reach it until this is dropped.
#[must_use = "dropping it stops the reports at once"]
pub struct ResourceWatch {
    hub: Arc<Hub>,
    id: u64,
}

impl fmt::Debug for ResourceWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceWatch")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for ResourceWatch {
    fn drop(&mut self) {
        self.hub.unregister(self.id);
    }
}

type Sinks = Arc<[(u64, Arc<dyn ChangeSink>)]>;

/// The sinks registered, and the providers' watches while there is one.
pub(crate) struct Hub {
    providers: Vec<Arc<dyn ErasedProvider>>,
    /// The application reports changes of its own resources (`Carmy::reports_resource_changes`).
    reports_own_changes: bool,
    /// Where the application's changes reach the other replicas, and theirs come from.
    feed: Option<Arc<dyn ChangeFeed>>,
    /// Copied on write: a report clones the `Arc` and calls the sinks without the lock.
    sinks: Mutex<Sinks>,
    /// The providers' watches and the next id, under one lock that serializes starting and
    /// stopping them. Never taken while reporting, so a provider may report from `watch`.
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    running: Option<Vec<Watching>>,
}

impl Hub {
    /// A hub for the providers that report changes.
    pub(crate) fn new(
        providers: Vec<Arc<dyn ErasedProvider>>,
        reports_own_changes: bool,
        feed: Option<Arc<dyn ChangeFeed>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            providers,
            reports_own_changes,
            feed,
            sinks: Mutex::new(Arc::new([])),
            state: Mutex::default(),
        })
    }

    /// Whether the application or any provider reports changes.
    pub(crate) fn reports_changes(&self) -> bool {
        self.reports_own_changes || !self.providers.is_empty()
    }

    /// Whether the application reports changes of its own resources.
    pub(crate) fn reports_own_changes(&self) -> bool {
        self.reports_own_changes
    }

    /// Where the application reports changes of its own resources: to this process's
    /// watchers and the other replicas'.
    pub(crate) fn changes(self: &Arc<Self>) -> ResourceChanges {
        ResourceChanges {
            hub: Arc::downgrade(self),
            shared: true,
        }
    }

    /// Where providers and the feed report: to this process's watchers only.
    fn local_changes(self: &Arc<Self>) -> ResourceChanges {
        ResourceChanges {
            hub: Arc::downgrade(self),
            shared: false,
        }
    }

    fn publish(&self, change: &ResourceChange) {
        if let Some(feed) = &self.feed {
            feed.publish(change);
        }
    }

    /// How many sinks are registered.
    pub(crate) fn watchers(&self) -> usize {
        lock(&self.sinks).len()
    }

    fn sinks(&self) -> Sinks {
        Arc::clone(&lock(&self.sinks))
    }

    /// Registers `sink`, starting the providers' watches if it is the first.
    pub(crate) fn register(
        self: &Arc<Self>,
        sink: Arc<dyn ChangeSink>,
    ) -> Result<ResourceWatch, AgentError> {
        let mut state = lock(&self.state);
        if state.running.is_none() {
            let changes = self.local_changes();
            // One failing provider fails the watch: the ones started are dropped with `started`.
            let mut started = self
                .providers
                .iter()
                .map(|provider| provider.watch(changes.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            // The other replicas' changes, while anyone here listens.
            if let Some(feed) = &self.feed {
                started.push(feed.follow(changes));
            }
            state.running = Some(started);
        }
        let id = state.next_id;
        state.next_id += 1;
        let mut sinks = lock(&self.sinks);
        *sinks = sinks.iter().cloned().chain([(id, sink)]).collect();
        Ok(ResourceWatch {
            hub: Arc::clone(self),
            id,
        })
    }

    fn unregister(&self, id: u64) {
        let mut state = lock(&self.state);
        let empty = {
            let mut sinks = lock(&self.sinks);
            *sinks = sinks.iter().filter(|(at, _)| *at != id).cloned().collect();
            sinks.is_empty()
        };
        if empty {
            // The last one left: every provider stops watching.
            state.running = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::{
        resource::{Contents, ProvidedResource, ResourceProvider},
        tool::Invocation,
    };

    /// Counts its watches, and keeps the handle of the last.
    #[derive(Default)]
    struct Counted {
        watching: Arc<AtomicUsize>,
        changes: Mutex<Option<ResourceChanges>>,
    }

    struct Live(Arc<AtomicUsize>);
    impl Drop for Live {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl ResourceProvider for Arc<Counted> {
        fn name(&self) -> &'static str {
            "counted"
        }
        fn claims(&self, _: &str) -> bool {
            false
        }
        async fn list(&self) -> Result<Vec<ProvidedResource>, AgentError> {
            Ok(Vec::new())
        }
        async fn read(&self, _: &str, _: Invocation) -> Result<Contents, AgentError> {
            Ok(Contents::new())
        }
        fn reports_changes(&self) -> bool {
            true
        }
        fn watch(&self, changes: ResourceChanges) -> Result<Watching, AgentError> {
            // Reporting from inside `watch` must not deadlock.
            changes.list_changed();
            *self.changes.lock().unwrap() = Some(changes);
            self.watching.fetch_add(1, Ordering::SeqCst);
            Ok(Watching::new(Live(Arc::clone(&self.watching))))
        }
    }

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);
    impl ChangeSink for Seen {
        fn updated(&self, uri: &str) {
            self.0.lock().unwrap().push(uri.to_owned());
        }
        fn list_changed(&self) {
            self.0.lock().unwrap().push("list".to_owned());
        }
    }

    #[test]
    fn providers_watch_while_someone_listens_and_reports_reach_every_sink() {
        let provider = Arc::new(Counted::default());
        let hub = Hub::new(vec![Arc::new(Arc::clone(&provider))], false, None);
        assert_eq!(provider.watching.load(Ordering::SeqCst), 0);
        let (first, second) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
        let a = hub.register(first.clone()).unwrap();
        let b = hub.register(second.clone()).unwrap();
        assert_eq!(
            provider.watching.load(Ordering::SeqCst),
            1,
            "one watch for both"
        );
        assert_eq!(hub.watchers(), 2);
        let changes = provider.changes.lock().unwrap().clone().unwrap();
        changes.updated("x://1");
        drop(a);
        changes.updated("x://2");
        assert_eq!(*first.0.lock().unwrap(), ["x://1"]);
        assert_eq!(*second.0.lock().unwrap(), ["x://1", "x://2"]);
        assert_eq!(provider.watching.load(Ordering::SeqCst), 1);
        drop(b);
        assert_eq!(
            provider.watching.load(Ordering::SeqCst),
            0,
            "the last one stops it"
        );
        assert_eq!(hub.watchers(), 0);
        changes.updated("x://3");
        // Listening again starts a new watch.
        let _again = hub.register(first.clone()).unwrap();
        assert_eq!(provider.watching.load(Ordering::SeqCst), 1);
        drop(hub);
        ResourceChanges::detached().updated("x://4");
    }
}

#[cfg(test)]
mod own_changes {
    use std::sync::{Arc, Mutex};

    use super::{ChangeSink, Hub};

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);
    impl ChangeSink for Seen {
        fn updated(&self, uri: &str) {
            self.0.lock().unwrap().push(uri.to_owned());
        }
        fn list_changed(&self) {
            self.0.lock().unwrap().push("list".to_owned());
        }
    }

    #[test]
    fn the_application_reports_its_own_changes_to_whoever_watches() {
        assert!(!Hub::new(Vec::new(), false, None).reports_changes());
        let hub = Hub::new(Vec::new(), true, None);
        assert!(hub.reports_changes());
        let changes = hub.changes();
        changes.updated("test://before");
        let seen = Arc::new(Seen::default());
        let watch = hub.register(seen.clone()).unwrap();
        changes.updated("test://watched");
        changes.list_changed();
        drop(watch);
        changes.updated("test://after");
        assert_eq!(*seen.0.lock().unwrap(), ["test://watched", "list"]);
    }
}
