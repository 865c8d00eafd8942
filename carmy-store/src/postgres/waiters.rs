//! Who waits on which key or task in this process, and how they are woken.
//!
//! A waiter (`Claim::Running`) subscribes to its key's tag. The tag is woken when this process
//! settles the key (at once, after its commit), and when the listener hears the server announce
//! it (another process settled it, or a sweep did). Waking drops the key's sender, which every
//! receiver sees. Nothing here is needed for correctness: a waiter also polls the database, and
//! always stops at its lease's expiry; this only makes it prompt.
//!
//! The holder of a task waits the same way (`TaskStore::changed`), on the task's tag: woken
//! when this process cancels or answers the task, and when the server announces that another
//! did.

use std::{
    collections::HashMap,
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use carmy_core::{IdempotencyKey, TaskKey};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::sync::lock;

#[derive(Debug, Default)]
pub(super) struct Waiters {
    by_tag: Mutex<HashMap<String, watch::Sender<()>>>,
    /// Whether the listener is connected and listening now (waiters then poll less often).
    listening: AtomicBool,
}

impl Waiters {
    /// A receiver that changes (closes) when `tag` is woken.
    pub(super) fn subscribe(&self, tag: &str) -> watch::Receiver<()> {
        lock(&self.by_tag)
            .entry(tag.to_owned())
            .or_insert_with(|| watch::Sender::new(()))
            .subscribe()
    }

    /// Wakes every waiter on `tag`.
    pub(super) fn wake(&self, tag: &str) {
        lock(&self.by_tag).remove(tag);
    }

    /// Forgets the tags nobody waits on any more.
    pub(super) fn prune(&self) {
        lock(&self.by_tag).retain(|_, sender| sender.receiver_count() > 0);
    }

    pub(super) fn set_listening(&self, listening: bool) {
        self.listening.store(listening, Ordering::Relaxed);
    }

    pub(super) fn listening(&self) -> bool {
        self.listening.load(Ordering::Relaxed)
    }
}

/// The tag the server announces `key` under: what the schema's `tag_of` computes, the SHA-256 of
/// the principal's length (4 bytes, big-endian, as `int4send`), the principal and the request
/// id, in hex.
pub(super) fn tag(key: &IdempotencyKey) -> String {
    tag_of(key.principal().as_bytes(), key.request_id().as_bytes())
}

/// The tag the server announces a write to task `key` under that its holder must act on: what
/// the schema's `announce_task` sends, `task:` and the tag of the task's principal and id.
pub(super) fn task_tag(key: &TaskKey) -> String {
    format!(
        "task:{}",
        tag_of(key.principal().as_bytes(), key.id().as_str().as_bytes())
    )
}

/// What the schema's `tag_of(principal, name)` computes.
fn tag_of(principal: &[u8], name: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(
        u32::try_from(principal.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    hasher.update(principal);
    hasher.update(name);
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_is_the_schemas() {
        // SELECT tag_of('ab', 'c'), computed by PostgreSQL 15.
        assert_eq!(
            tag(&IdempotencyKey::new(Some("ab"), "c")),
            "3dc693fb05f87048570cb494badaae90fe011e14b93ac478d40d02462b39b9b3"
        );
        assert_ne!(
            tag(&IdempotencyKey::new(Some("a"), "bc")),
            tag(&IdempotencyKey::new(Some("ab"), "c"))
        );
        // A task's tag is the same hash of its principal and id, told apart by its prefix.
        assert_eq!(
            task_tag(&TaskKey::new(Some("ab"), "c")),
            "task:3dc693fb05f87048570cb494badaae90fe011e14b93ac478d40d02462b39b9b3"
        );
    }

    #[tokio::test]
    async fn waking_a_tag_wakes_its_waiters_only() {
        let waiters = Waiters::default();
        let mut mine = waiters.subscribe("a");
        let other = waiters.subscribe("b");
        waiters.wake("a");
        assert!(mine.changed().await.is_err());
        assert!(!other.has_changed().unwrap());
        drop(other);
        waiters.prune();
        assert!(lock(&waiters.by_tag).is_empty());
    }
}
