//! Resource changes, told to clients: `resources/subscribe` and `resources/unsubscribe` with
//! unsolicited `notifications/resources/list_changed` (2025-11-25 and older), and
//! `subscriptions/listen` streams (2026-07-28).
//!
//! The runtime's providers report changes to a [`ChangeSink`]; here it is an [`Interest`]: the
//! URIs one listener follows and whether it wants list changes, with what is pending for it.
//! Reports arrive on the provider's thread, so the sink only records them (a set, a flag:
//! bounded however fast files change) and wakes a task that sends them as notifications.
//!
//! - On the older lifecycle, a session's interest is registered once the client is
//!   initialized: it wants list changes (the capability promises them) and the URIs it
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

use carmy_core::{ChangeSink, Context, ResourceWatch, Runtime};
use rmcp::{
    ErrorData, Peer, RoleServer,
    model::{
        ResourceUpdatedNotificationParam, SubscribeRequestMethod, SubscribeRequestParams,
        SubscriptionFilter, UnsubscribeRequestParams,
    },
    service::{RequestContext, SubscriptionContext},
};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::{mapping::read_error, scope::CallScope, sync::lock};

/// The most resource URIs one session may follow: subscribed to, plus those its open
/// `subscriptions/listen` streams follow.
pub(crate) const MAX_SUBSCRIPTIONS: usize = 100;

/// The most `subscriptions/listen` streams one session may hold open.
pub(crate) const MAX_LISTENS: usize = 8;

/// What one listener follows, and what is pending for it.
#[derive(Debug)]
pub(crate) struct Interest {
    state: Mutex<Followed>,
    wake: Notify,
}

#[derive(Debug, Default)]
struct Followed {
    uris: BTreeSet<String>,
    list: bool,
    /// Changed since last sent: a subset of `uris`.
    updated: BTreeSet<String>,
    list_changed: bool,
}

impl Interest {
    fn new(uris: impl IntoIterator<Item = String>, list: bool) -> Self {
        Self {
            state: Mutex::new(Followed {
                uris: uris.into_iter().collect(),
                list,
                ..Followed::default()
            }),
            wake: Notify::new(),
        }
    }

    /// Follows only `uris` (and list changes if `list`) from now on, and forgets what changed
    /// elsewhere.
    fn narrow(&self, uris: &[String], list: bool) {
        let mut state = lock(&self.state);
        state.list &= list;
        state.list_changed &= list;
        state.uris.retain(|uri| uris.contains(uri));
        let Followed { uris, updated, .. } = &mut *state;
        updated.retain(|uri| uris.contains(uri));
    }

    /// What changed since the last call: whether the list did, and which URIs.
    fn take(&self) -> (bool, BTreeSet<String>) {
        let mut state = lock(&self.state);
        let list_changed = std::mem::take(&mut state.list_changed);
        (list_changed, std::mem::take(&mut state.updated))
    }
}

impl ChangeSink for Interest {
    fn updated(&self, uri: &str) {
        let mut state = lock(&self.state);
        if state.uris.contains(uri) {
            state.updated.insert(uri.to_owned());
            drop(state);
            self.wake.notify_one();
        }
    }

    fn list_changed(&self) {
        let mut state = lock(&self.state);
        if state.list {
            state.list_changed = true;
            drop(state);
            self.wake.notify_one();
        }
    }
}

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
    watch: ResourceWatch,
}

#[derive(Debug, Default)]
struct Listening {
    streams: usize,
    uris: usize,
}

/// Dropping it unregisters the session's interest and ends its task.
#[derive(Debug)]
struct Forwarding {
    _watch: ResourceWatch,
    _task: DropGuard,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Self {
            legacy: Arc::new(Interest::new([], true)),
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

/// Sends what `interest` gathers to `peer` until `stop` (the session closed) or the peer is
/// gone.
async fn forward(interest: Arc<Interest>, peer: Peer<RoleServer>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = interest.wake.notified() => {}
        }
        let (list_changed, updated) = interest.take();
        if list_changed && peer.notify_resource_list_changed().await.is_err() {
            return;
        }
        for uri in updated {
            let notification = ResourceUpdatedNotificationParam::new(uri);
            if peer.notify_resource_updated(notification).await.is_err() {
                return;
            }
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
        if !runtime.catalog().reports_resource_changes() {
            return;
        }
        let subscriptions = self;
        let mut forwarding = lock(&subscriptions.forwarding);
        if forwarding.is_some() {
            return;
        }
        let interest = Arc::clone(&subscriptions.legacy);
        let watch = match runtime.watch_resources(Arc::clone(&interest) as Arc<dyn ChangeSink>) {
            Ok(watch) => watch,
            Err(error) => {
                tracing::warn!(%error, "resource changes cannot be watched; none will be told");
                return;
            }
        };
        let stop = CancellationToken::new();
        // Spawned: its notifications are the session's, not part of the request that started it.
        tokio::spawn(forward(interest, peer.clone(), stop.clone()));
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

    /// What a `subscriptions/listen` stream may follow: list changes if asked, and the URIs asked
    /// that are claimed, as many as the session has room for (the acknowledgment tells the client
    /// which). `None` when nothing ever changes: the method is not served then. rmcp asks this
    /// synchronously, so no provider is consulted here: [`Self::listen`] checks each URI before it
    /// follows it, and follows none that a read would refuse.
    pub(crate) fn accepted_filter(
        &self,
        runtime: &Runtime,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        if !runtime.catalog().reports_resource_changes() {
            return None;
        }
        let mut accepted = SubscriptionFilter::builder();
        let list = requested.resources_list_changed == Some(true);
        if list {
            accepted = accepted.resources_list_changed();
        }
        let room = self.room(&lock(&self.listening));
        let mut uris = BTreeSet::new();
        for uri in requested.resource_subscriptions.iter().flatten() {
            if uris.len() == room {
                break;
            }
            if claimed(runtime, uri) {
                uris.insert(uri.clone());
            }
        }
        let interest = Arc::new(Interest::new(uris.iter().cloned(), list));
        if !uris.is_empty() {
            accepted = accepted.resource_subscriptions(uris);
        }
        let accepted = accepted.build();
        self.arm(runtime, &accepted, interest);
        Some(accepted)
    }

    /// Starts watching for the stream whose filter was just accepted, before rmcp acknowledges it.
    /// Without a watch now, [`Self::listen`] starts one itself.
    fn arm(&self, runtime: &Runtime, accepted: &SubscriptionFilter, interest: Arc<Interest>) {
        let Ok(watch) = runtime.watch_resources(Arc::clone(&interest) as Arc<dyn ChangeSink>)
        else {
            return;
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
            (accepted.resources_list_changed != Some(true)
                || armed.accepted.resources_list_changed == Some(true))
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
        let wants_list = accepted.resources_list_changed == Some(true);
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
        let (interest, _watch) = match self.take_armed(accepted) {
            Some(armed) => {
                // What changed meanwhile is kept, for the URIs that passed the check.
                armed.interest.narrow(&uris, wants_list);
                (armed.interest, armed.watch)
            }
            None => {
                let interest = Arc::new(Interest::new(uris, wants_list));
                let watch = runtime
                    .watch_resources(Arc::clone(&interest) as Arc<dyn ChangeSink>)
                    .map_err(|error| {
                        ErrorData::internal_error(
                            error.message().to_owned(),
                            Some(error.to_envelope()),
                        )
                    })?;
                (interest, watch)
            }
        };
        let sink = context.sink();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = interest.wake.notified() => {}
            }
            let (list_changed, updated) = interest.take();
            // A send fails once the stream is closed: the request is ending anyway.
            if list_changed && sink.notify_resource_list_changed().await.is_err() {
                return Ok(());
            }
            for uri in updated {
                if sink.notify_resource_updated(uri).await.is_err() {
                    return Ok(());
                }
            }
        }
    }
}
