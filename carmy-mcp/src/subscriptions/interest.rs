//! One listener's interest: the URIs it follows and the lists whose changes it wants told, what
//! is pending for it, and where its notifications go.

use std::{collections::BTreeSet, sync::Mutex};

use carmy_core::{CatalogChanges, ChangeSink, ListsChanged};
use rmcp::{Peer, RoleServer, model::ResourceUpdatedNotificationParam, service::SubscriptionSink};
use tokio::sync::Notify;

use crate::sync::lock;

/// What one listener follows, and what is pending for it.
#[derive(Debug)]
pub(crate) struct Interest {
    pub(super) state: Mutex<Followed>,
    wake: Notify,
}

#[derive(Debug, Default)]
pub(super) struct Followed {
    pub(super) uris: BTreeSet<String>,
    /// The lists whose changes it wants told.
    lists: ListsChanged,
    /// Changed since last sent: a subset of `uris`.
    pub(super) updated: BTreeSet<String>,
    /// Changed since last sent: a subset of `lists`.
    lists_changed: ListsChanged,
}

impl Interest {
    pub(super) fn new(uris: impl IntoIterator<Item = String>, lists: ListsChanged) -> Self {
        Self {
            state: Mutex::new(Followed {
                uris: uris.into_iter().collect(),
                lists,
                ..Followed::default()
            }),
            wake: Notify::new(),
        }
    }

    /// Follows only `uris` (and the changes of `lists`) from now on, and forgets what changed
    /// elsewhere.
    pub(super) fn narrow(&self, uris: &[String], lists: ListsChanged) {
        let mut state = lock(&self.state);
        state.lists = state.lists.both(lists);
        state.lists_changed = state.lists_changed.both(lists);
        state.uris.retain(|uri| uris.contains(uri));
        let Followed { uris, updated, .. } = &mut *state;
        updated.retain(|uri| uris.contains(uri));
    }

    /// Records that the catalog changed `changed`, as far as it wants them told.
    fn lists_changed(&self, changed: ListsChanged) {
        let mut state = lock(&self.state);
        let wanted = changed.both(state.lists);
        if wanted.any() {
            state.lists_changed = state.lists_changed.either(wanted);
            drop(state);
            self.wake.notify_one();
        }
    }

    /// What changed since the last call: which lists did, and which URIs.
    pub(super) fn take(&self) -> (ListsChanged, BTreeSet<String>) {
        let mut state = lock(&self.state);
        let lists_changed = std::mem::take(&mut state.lists_changed);
        (lists_changed, std::mem::take(&mut state.updated))
    }

    /// Waits until something it follows changed: a provider's report, or the catalog's own
    /// change (`changes`) of a list it wants.
    pub(super) async fn changed(&self, changes: &mut CatalogChanges) {
        loop {
            tokio::select! {
                () = self.wake.notified() => return,
                Some(lists) = changes.changed() => Interest::lists_changed(self, lists),
            }
        }
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
        Interest::lists_changed(
            self,
            ListsChanged {
                resources: true,
                ..ListsChanged::default()
            },
        );
    }
}

/// Where an interest's notifications go.
#[derive(Clone, Copy)]
pub(super) enum Listener<'a> {
    /// An older session, told unsolicited.
    Session(&'a Peer<RoleServer>),
    /// A `subscriptions/listen` stream.
    Stream(&'a SubscriptionSink),
}

impl Listener<'_> {
    /// Tells what changed: the lists, then the URIs. False once the listener is gone (a send
    /// fails then), and nothing more is sent.
    pub(super) async fn tell(self, lists: ListsChanged, updated: BTreeSet<String>) -> bool {
        // The same call on either: rmcp gives the two their own methods and errors.
        macro_rules! send {
            ($method:ident) => {
                match self {
                    Listener::Session(peer) => peer.$method().await.is_ok(),
                    Listener::Stream(sink) => sink.$method().await.is_ok(),
                }
            };
        }
        if lists.tools && !send!(notify_tool_list_changed) {
            return false;
        }
        if lists.prompts && !send!(notify_prompt_list_changed) {
            return false;
        }
        if lists.resources && !send!(notify_resource_list_changed) {
            return false;
        }
        for uri in updated {
            let told = match self {
                Listener::Session(peer) => peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await
                    .is_ok(),
                Listener::Stream(sink) => sink.notify_resource_updated(uri).await.is_ok(),
            };
            if !told {
                return false;
            }
        }
        true
    }
}
