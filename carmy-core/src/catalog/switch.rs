//! The part of a catalog that changes while it serves: which entries are disabled now, and who
//! hears when a list changes.
//!
//! Each source of rules (the application, the configuration...) has its own list, and what is
//! disabled is what any of them disables, so that one source replacing its list leaves the
//! others' alone. The lists live in a `watch` channel: a change replaces one and moves a version
//! per list of the catalog (tools, resources, prompts) whose members it changed, and every
//! listener (one per MCP session) compares versions to learn which lists to announce. Many
//! changes between two looks are heard as one, so a listener never falls behind. Lookups read
//! the set only when something is disabled, which a flag says without a lock.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use tokio::sync::watch;

use crate::disabled::Disabled;

/// Which lists of a catalog a change changed: each `true` one is told to clients as
/// `notifications/{tools,resources,prompts}/list_changed`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListsChanged {
    /// Some tool appeared or disappeared.
    pub tools: bool,
    /// Some resource, template or provided URI appeared or disappeared.
    pub resources: bool,
    /// Some prompt appeared or disappeared.
    pub prompts: bool,
}

impl ListsChanged {
    /// Every list.
    pub const ALL: Self = Self {
        tools: true,
        resources: true,
        prompts: true,
    };

    /// Whether any list changed.
    pub fn any(self) -> bool {
        self.tools || self.resources || self.prompts
    }

    /// The lists both name.
    #[must_use]
    pub fn both(self, other: Self) -> Self {
        Self {
            tools: self.tools && other.tools,
            resources: self.resources && other.resources,
            prompts: self.prompts && other.prompts,
        }
    }

    /// The lists either names.
    #[must_use]
    pub fn either(self, other: Self) -> Self {
        Self {
            tools: self.tools || other.tools,
            resources: self.resources || other.resources,
            prompts: self.prompts || other.prompts,
        }
    }
}

/// Each source's rules, what they disable together, and how often each list has changed.
#[derive(Debug, Default)]
struct Switched {
    /// By source, none empty.
    sources: Vec<(&'static str, Disabled)>,
    disabled: Arc<Disabled>,
    versions: Versions,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Versions {
    tools: u64,
    resources: u64,
    prompts: u64,
}

impl Versions {
    fn since(self, seen: Self) -> ListsChanged {
        ListsChanged {
            tools: self.tools != seen.tools,
            resources: self.resources != seen.resources,
            prompts: self.prompts != seen.prompts,
        }
    }

    fn advanced(self, changed: ListsChanged) -> Self {
        Self {
            tools: self.tools + u64::from(changed.tools),
            resources: self.resources + u64::from(changed.resources),
            prompts: self.prompts + u64::from(changed.prompts),
        }
    }
}

/// A catalog's disabled set and its listeners.
#[derive(Debug)]
pub(super) struct Switch {
    current: watch::Sender<Switched>,
    /// Whether anything is disabled: false for most servers, whose lookups then take no lock.
    any: AtomicBool,
}

impl Switch {
    pub(super) fn new() -> Self {
        Self {
            current: watch::Sender::new(Switched::default()),
            any: AtomicBool::new(false),
        }
    }

    /// The disabled set now, `None` when nothing is disabled.
    pub(super) fn disabled(&self) -> Option<Arc<Disabled>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        Some(Arc::clone(&self.current.borrow().disabled))
    }

    /// Whether `check` holds for the disabled set now; false when nothing is disabled.
    pub(super) fn disables(&self, check: impl FnOnce(&Disabled) -> bool) -> bool {
        self.any.load(Ordering::Acquire) && check(&self.current.borrow().disabled)
    }

    /// Replaces `source`'s rules; `changed` says which lists that changes, from what was
    /// disabled before and after (asked under the channel's lock, so two replacements are told
    /// in order).
    pub(super) fn replace(
        &self,
        source: &'static str,
        rules: Disabled,
        changed: impl FnOnce(&Disabled, &Disabled) -> ListsChanged,
    ) -> ListsChanged {
        let mut told = ListsChanged::default();
        self.current.send_if_modified(|switched| {
            switched.sources.retain(|(named, _)| *named != source);
            if !rules.is_empty() {
                switched.sources.push((source, rules));
            }
            let disabled = switched
                .sources
                .iter()
                .fold(Disabled::none(), |all, (_, rules)| all.and(rules));
            told = changed(&switched.disabled, &disabled);
            self.any.store(!disabled.is_empty(), Ordering::Release);
            switched.disabled = Arc::new(disabled);
            switched.versions = switched.versions.advanced(told);
            told.any()
        });
        told
    }

    /// A listener that hears the changes made from now on.
    pub(super) fn changes(&self) -> CatalogChanges {
        let receiver = self.current.subscribe();
        let seen = receiver.borrow().versions;
        CatalogChanges { receiver, seen }
    }
}

/// The changes of a catalog's lists, as one listener hears them
/// ([`Catalog::changes`](crate::Catalog::changes)).
#[derive(Debug)]
pub struct CatalogChanges {
    receiver: watch::Receiver<Switched>,
    seen: Versions,
}

impl CatalogChanges {
    /// Waits for the next change of a list, and says which lists changed since the last one it
    /// told (several changes meanwhile are told as one). `None` once the catalog is gone.
    pub async fn changed(&mut self) -> Option<ListsChanged> {
        loop {
            self.receiver.changed().await.ok()?;
            let versions = self.receiver.borrow_and_update().versions;
            let changed = versions.since(self.seen);
            self.seen = versions;
            if changed.any() {
                return Some(changed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools_if_differ(before: &Disabled, after: &Disabled) -> ListsChanged {
        ListsChanged {
            tools: before != after,
            ..ListsChanged::default()
        }
    }

    #[tokio::test]
    async fn a_listener_hears_each_list_that_changed_once() {
        let switch = Switch::new();
        let mut changes = switch.changes();
        assert!(switch.disabled().is_none());
        let told = switch.replace("", Disabled::parse(["a"]).unwrap(), tools_if_differ);
        assert!(told.tools && !told.prompts);
        assert!(switch.disables(|disabled| disabled.tool("a", crate::Effect::Read)));
        // Two changes before the listener looks are heard as one.
        switch.replace("", Disabled::none(), tools_if_differ);
        assert_eq!(
            changes.changed().await,
            Some(ListsChanged {
                tools: true,
                ..ListsChanged::default()
            })
        );
        assert!(switch.disabled().is_none());
        // A replacement that changes no list is not heard.
        let told = switch.replace("", Disabled::none(), tools_if_differ);
        assert!(!told.any());
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(20), changes.changed()).await;
        assert!(waited.is_err(), "heard a change that changed nothing");
    }

    #[test]
    fn each_source_replaces_its_own_rules_only() {
        let switch = Switch::new();
        switch.replace("app", Disabled::parse(["a"]).unwrap(), tools_if_differ);
        switch.replace("config", Disabled::parse(["b"]).unwrap(), tools_if_differ);
        let off = |name: &str| switch.disables(|disabled| disabled.tool(name, crate::Effect::Read));
        assert!(off("a") && off("b"));
        switch.replace("config", Disabled::none(), tools_if_differ);
        assert!(off("a") && !off("b"));
        switch.replace("app", Disabled::none(), tools_if_differ);
        assert!(switch.disabled().is_none());
    }

    #[tokio::test]
    async fn a_listener_stops_with_the_catalog() {
        let switch = Switch::new();
        let mut changes = switch.changes();
        drop(switch);
        assert_eq!(changes.changed().await, None);
    }
}
