//! Changes, told to clients: of the catalog's lists (`notifications/tools/list_changed`, and the
//! prompts' and resources'), and of resources: `resources/subscribe` and `resources/unsubscribe`
//! with unsolicited notifications (2025-11-25 and older), and `subscriptions/listen` streams
//! (2026-07-28).
//!
//! The runtime's providers report changes to a [`ChangeSink`]; here it is an [`Interest`]: the
//! URIs one listener follows and which lists it wants told, with what is pending for it.
//! Reports arrive on the provider's thread, so the sink only records them (a set, flags:
//! bounded however fast files change) and wakes a task that sends them as notifications. The
//! same task hears the catalog's own changes ([`CatalogChanges`]: a tool disabled while
//! serving) and records them alike.
//!
//! - On the older lifecycle, a session's interest is registered once the client is
//!   initialized: it wants every list's changes (the capabilities promise them) and the URIs it
//!   subscribed to. Its task is spawned, so its notifications go out on the session's own
//!   stream rather than as part of a request.
//! - On 2026-07-28, each `subscriptions/listen` request registers its own interest, the filter
//!   rmcp acknowledged, for as long as the request runs; notifications go through its sink.
//!
//! Both belong to the session ([`SessionState`](crate::server::SessionState)): when it closes,
//! its interests are unregistered, its task ends, and the runtime stops watching once nobody
//! does. A session holds at most [`MAX_SUBSCRIPTIONS`] resource URIs (subscribed, or followed
//! by its open streams) and [`MAX_LISTENS`] open streams; past that it is refused.

use std::{
    collections::{BTreeSet, VecDeque},
    pin::pin,
    sync::{Arc, Mutex},
};

use carmy_core::{CatalogChanges, ChangeSink, Context, ListsChanged, ResourceWatch, Runtime};
use rmcp::{
    ErrorData, Peer, RoleServer,
    model::{
        SubscribeRequestMethod, SubscribeRequestParams, SubscriptionFilter,
        UnsubscribeRequestParams,
    },
    service::{RequestContext, SubscriptionContext},
};
use serde_json::json;
use tokio_util::sync::{CancellationToken, DropGuard};

mod interest;

use crate::{mapping::read_error, scope::CallScope, sync::lock};
use interest::{Interest, Listener};

/// The most resource URIs one session may follow: subscribed to, plus those its open
/// `subscriptions/listen` streams follow.
pub(crate) const MAX_SUBSCRIPTIONS: usize = 100;

/// The most `subscriptions/listen` streams one session may hold open.
pub(crate) const MAX_LISTENS: usize = 8;

/// A session's subscriptions.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    /// The older lifecycle's: list changes, and the URIs subscribed to.
    legacy: Arc<Interest>,
    /// Its registration and its task, once started; dropped with the session.
    forwarding: Mutex<Option<Forwarding>>,
    /// The open streams, and how many URIs they follow.
    listening: Mutex<Listening>,
    /// Watches started as streams were acknowledged, each waiting for its stream to begin.
    armed: Mutex<VecDeque<Armed>>,
}

/// A stream's watch, started when its filter was accepted: rmcp acknowledges a stream before
/// it runs it, and a client may change a file as soon as it reads the acknowledgment, so the
/// watch must already be in place. [`Subscriptions::listen`] takes it up.
#[derive(Debug)]
struct Armed {
    accepted: SubscriptionFilter,
    interest: Arc<Interest>,
    /// The catalog's changes from the moment the filter was accepted.
    changes: CatalogChanges,
    /// `None` when resources change only by the catalog's own changes.
    watch: Option<ResourceWatch>,
}

#[derive(Debug, Default)]
struct Listening {
    streams: usize,
    uris: usize,
}

/// Dropping it unregisters the session's interest and ends its task.
#[derive(Debug)]
struct Forwarding {
    /// `None` when no resource ever changes but by the catalog's own changes.
    _watch: Option<ResourceWatch>,
    _task: DropGuard,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Self {
            legacy: Arc::new(Interest::new([], ListsChanged::ALL)),
            forwarding: Mutex::default(),
            listening: Mutex::default(),
            armed: Mutex::default(),
        }
    }
}

fn too_many(what: &str, max: usize) -> ErrorData {
    ErrorData::invalid_params(
        format!("a session may hold at most {max} {what}; end one first"),
        Some(json!({ "error": { "code": "TOO_MANY_SUBSCRIPTIONS", "max": max } })),
    )
}

/// The list changes `filter` asks for.
fn lists_of(filter: &SubscriptionFilter) -> ListsChanged {
    let asked = |list: Option<bool>| list == Some(true);
    ListsChanged {
        tools: asked(filter.tools_list_changed),
        resources: asked(filter.resources_list_changed),
        prompts: asked(filter.prompts_list_changed),
    }
}

/// Whether `uri` may name something this server serves, asked without I/O: a resource, or a
/// provider's claim. A claim is lenient (a provider claims what it then refuses), so what a
/// client follows is also [checked](checked) before it is followed.
fn claimed(runtime: &Runtime, uri: &str) -> bool {
    let catalog = runtime.catalog();
    catalog.resolve_resource(uri).is_some() || catalog.resolve_provider(uri).is_some()
}

/// Whether `uri` names something this server serves now and the caller may read, as the
/// runtime finds it without reading it; otherwise the error a read of it would give on this
/// protocol version.
async fn checked(
    runtime: &Runtime,
    host: &Context,
    uri: &str,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let scope = CallScope::of(host, context);
    scope
        .run(pin!(runtime.check_resource(
            uri,
            &scope.context,
            &scope.cancellation
        )))
        .await
        .map_err(|error| read_error(&error, false, context.protocol_version().as_ref()))
}

/// Sends what `interest` gathers, and the catalog's list changes, to `peer` until `stop` (the
/// session closed) or the peer is gone.
async fn forward(
    interest: Arc<Interest>,
    mut changes: CatalogChanges,
    peer: Peer<RoleServer>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = interest.changed(&mut changes) => {}
        }
        let (lists, updated) = interest.take();
        if !Listener::Session(&peer).tell(lists, updated).await {
            return;
        }
    }
}

/// One open stream's share of the session's room, given back when it ends.
struct Slot<'a> {
    subscriptions: &'a Subscriptions,
    uris: usize,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut listening = lock(&self.subscriptions.listening);
        listening.streams -= 1;
        listening.uris -= self.uris;
    }
}

impl Subscriptions {
    /// How many more URIs the session may follow. Taken under `listening`'s lock, which also
    /// serializes every change to the count.
    fn room(&self, listening: &Listening) -> usize {
        let subscribed = lock(&self.legacy.state).uris.len();
        MAX_SUBSCRIPTIONS.saturating_sub(subscribed + listening.uris)
    }

    /// Starts telling this (older lifecycle) session about changes, once: after `initialized`, or
    /// at its first subscription if it never said it was.
    pub(crate) fn start_legacy(&self, runtime: &Runtime, peer: &Peer<RoleServer>) {
        let subscriptions = self;
        let mut forwarding = lock(&subscriptions.forwarding);
        if forwarding.is_some() {
            return;
        }
        let interest = Arc::clone(&subscriptions.legacy);
        let watch = if runtime.catalog().reports_resource_changes() {
            match runtime.watch_resources(Arc::clone(&interest) as Arc<dyn ChangeSink>) {
                Ok(watch) => Some(watch),
                Err(error) => {
                    tracing::warn!(%error, "resource changes cannot be watched; none will be told");
                    None
                }
            }
        } else {
            None
        };
        let stop = CancellationToken::new();
        let changes = runtime.catalog().changes();
        // Spawned: its notifications are the session's, not part of the request that started it.
        tokio::spawn(forward(interest, changes, peer.clone(), stop.clone()));
        *forwarding = Some(Forwarding {
            _watch: watch,
            _task: stop.drop_guard(),
        });
    }

    /// `resources/subscribe`: the URI must name a resource the caller may read (else the error its
    /// read would give: `-32002` on the versions that have this method, `-32602` with
    /// `RESOURCE_NOT_ALLOWED` for what the caller's access rules leave out); the session must have
    /// room (else `-32602`, saying the bound).
    pub(crate) async fn subscribe(
        &self,
        runtime: &Runtime,
        host: &Context,
        params: &SubscribeRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !runtime.catalog().reports_resource_changes() {
            return Err(ErrorData::method_not_found::<SubscribeRequestMethod>());
        }
        let uri = &params.uri;
        checked(runtime, host, uri, context).await?;
        let subscriptions = self;
        {
            let listening = lock(&subscriptions.listening);
            let room = subscriptions.room(&listening);
            let mut followed = lock(&subscriptions.legacy.state);
            if !followed.uris.contains(uri) {
                if room == 0 {
                    return Err(too_many("resource subscriptions", MAX_SUBSCRIPTIONS));
                }
                followed.uris.insert(uri.clone());
            }
        }
        self.start_legacy(runtime, &context.peer);
        Ok(())
    }

    /// `resources/unsubscribe`: forgets the URI (nothing to forget is fine).
    pub(crate) fn unsubscribe(&self, params: &UnsubscribeRequestParams) {
        let mut followed = lock(&self.legacy.state);
        followed.uris.remove(&params.uri);
        followed.updated.remove(&params.uri);
    }

    /// What a `subscriptions/listen` stream may follow: the list changes asked, of the lists this
    /// server has; and, when its resources report changes, the URIs asked that are claimed, as
    /// many as the session has room for (the acknowledgment tells the client which). rmcp asks
    /// this synchronously, so no provider is consulted here: [`Self::listen`] checks each URI
    /// before it follows it, and follows none that a read would refuse.
    pub(crate) fn accepted_filter(
        &self,
        runtime: &Runtime,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let catalog = runtime.catalog();
        let served = ListsChanged {
            tools: true,
            prompts: catalog.prompts().next().is_some(),
            resources: catalog.resources().next().is_some() || catalog.providers().next().is_some(),
        };
        let lists = lists_of(requested).both(served);
        let mut accepted = SubscriptionFilter::builder();
        if lists.tools {
            accepted = accepted.tools_list_changed();
        }
        if lists.prompts {
            accepted = accepted.prompts_list_changed();
        }
        if lists.resources {
            accepted = accepted.resources_list_changed();
        }
        let mut uris = BTreeSet::new();
        if catalog.reports_resource_changes() {
            let room = self.room(&lock(&self.listening));
            for uri in requested.resource_subscriptions.iter().flatten() {
                if uris.len() == room {
                    break;
                }
                if claimed(runtime, uri) {
                    uris.insert(uri.clone());
                }
            }
        }
        let interest = Arc::new(Interest::new(uris.iter().cloned(), lists));
        if !uris.is_empty() {
            accepted = accepted.resource_subscriptions(uris);
        }
        let accepted = accepted.build();
        self.arm(runtime, &accepted, interest);
        Some(accepted)
    }

    /// Starts watching for the stream whose filter was just accepted, before rmcp acknowledges it:
    /// the catalog's changes always, the resources' when they report changes. Without a watch
    /// now, [`Self::listen`] starts one itself.
    fn arm(&self, runtime: &Runtime, accepted: &SubscriptionFilter, interest: Arc<Interest>) {
        let changes = runtime.catalog().changes();
        let watch = if runtime.catalog().reports_resource_changes() {
            match runtime.watch_resources(Arc::clone(&interest) as Arc<dyn ChangeSink>) {
                Ok(watch) => Some(watch),
                Err(_) => return,
            }
        } else {
            None
        };
        let mut armed = lock(&self.armed);
        // A stream rmcp accepted but never ran (its request failed) leaves its watch here: the
        // oldest go first, so the session holds no more than it may have streams.
        if armed.len() >= MAX_LISTENS {
            armed.pop_front();
        }
        armed.push_back(Armed {
            accepted: accepted.clone(),
            interest,
            changes,
            watch,
        });
    }

    /// The watch armed for a stream with this filter, if any: the oldest whose filter covers it
    /// (rmcp runs streams in the order it accepts them, and may accept less than the handler did,
    /// never more).
    fn take_armed(&self, accepted: &SubscriptionFilter) -> Option<Armed> {
        let covers = |armed: &Armed| {
            let followed = armed
                .accepted
                .resource_subscriptions
                .as_deref()
                .unwrap_or_default();
            let lists = lists_of(accepted);
            lists.both(lists_of(&armed.accepted)) == lists
                && accepted
                    .resource_subscriptions
                    .iter()
                    .flatten()
                    .all(|uri| followed.contains(uri))
        };
        let mut armed = lock(&self.armed);
        let position = armed.iter().position(covers)?;
        armed.remove(position)
    }

    /// `subscriptions/listen`, acknowledged: tells the stream of changes until it is cancelled
    /// (by the client, or because the session closed). A stream past the session's bounds ends at
    /// once with an error.
    pub(crate) async fn listen(
        &self,
        runtime: &Runtime,
        host: &Context,
        context: SubscriptionContext,
    ) -> Result<(), ErrorData> {
        let accepted = context.accepted();
        let lists = lists_of(accepted);
        // Acknowledged on a claim; followed only if a read could succeed (a URI that leads
        // outside a served directory never is, so no change there is ever told).
        let mut uris = Vec::new();
        for uri in accepted.resource_subscriptions.iter().flatten() {
            if checked(runtime, host, uri, context.request_context())
                .await
                .is_ok()
            {
                uris.push(uri.clone());
            }
        }
        let subscriptions = self;
        let _slot = {
            let mut listening = lock(&subscriptions.listening);
            if listening.streams >= MAX_LISTENS {
                return Err(too_many("open subscriptions/listen streams", MAX_LISTENS));
            }
            // Room was checked when the filter was accepted; a stream opened since may have taken it.
            if uris.len() > subscriptions.room(&listening) {
                return Err(too_many("resource subscriptions", MAX_SUBSCRIPTIONS));
            }
            listening.streams += 1;
            listening.uris += uris.len();
            Slot {
                subscriptions,
                uris: uris.len(),
            }
        };
        let (interest, mut changes, _watch) = match self.take_armed(accepted) {
            Some(armed) => {
                // What changed meanwhile is kept, for the URIs that passed the check.
                armed.interest.narrow(&uris, lists);
                (armed.interest, armed.changes, armed.watch)
            }
            None => {
                let changes = runtime.catalog().changes();
                let interest = Arc::new(Interest::new(uris, lists));
                let watch = if runtime.catalog().reports_resource_changes() {
                    let watch = runtime
                        .watch_resources(Arc::clone(&interest) as Arc<dyn ChangeSink>)
                        .map_err(|error| {
                            ErrorData::internal_error(
                                error.message().to_owned(),
                                Some(error.to_envelope()),
                            )
                        })?;
                    Some(watch)
                } else {
                    None
                };
                (interest, changes, watch)
            }
        };
        let sink = Listener::Stream(context.sink());
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = interest.changed(&mut changes) => {}
            }
            let (lists, updated) = interest.take();
            // A send fails once the stream is closed: the request is ending anyway.
            if !sink.tell(lists, updated).await {
                return Ok(());
            }
        }
    }
}
