//! Calls waiting for their users' answers (2025-11-25): bounded per principal and in all,
//! in calls and in the bytes of their arguments.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use carmy_core::{AgentError, ErrorCategory, Grant, codes};
use serde_json::{Value, json};

use crate::sync::lock;

/// Calls of one principal that may wait for the user at once (2025-11-25). On stdio the
/// principal is the session's: a client is seldom asked more than a few questions at a time.
pub(super) const MAX_WAITING_PER_PRINCIPAL: usize = 4;
/// Bytes of arguments the waiting calls of one principal may hold, as [`weight`] counts them;
/// a call whose arguments weigh more can never wait.
const MAX_WAITING_BYTES_PER_PRINCIPAL: usize = 16 << 20;
/// Calls that may wait for their users at once, every principal together.
pub(super) const MAX_WAITING: usize = 64;
/// Bytes of arguments all waiting calls together may hold.
const MAX_WAITING_BYTES: usize = 64 << 20;

/// The calls waiting for their users' answers, per principal and in all.
#[derive(Default)]
pub(super) struct Waiting {
    pub(super) shares: HashMap<Option<String>, Share>,
    pub(super) all: Share,
}

/// What some waiting calls hold.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Share {
    pub(super) calls: usize,
    pub(super) bytes: usize,
}

/// Why a call may not wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Crowded {
    /// Its arguments weigh more than one principal's waiting calls may hold: never.
    TooLarge { bytes: usize },
    /// Enough calls wait already: once one is answered.
    Full,
}

impl Waiting {
    /// A place among the calls waiting for their users, for a call of `principal`'s whose
    /// arguments weigh `bytes`; freed when dropped.
    pub(super) fn place(
        waiting: &Arc<Mutex<Self>>,
        principal: Option<&str>,
        bytes: usize,
    ) -> Result<WaitingPlace, Crowded> {
        lock(waiting).take(principal, bytes)?;
        Ok(WaitingPlace {
            waiting: Arc::clone(waiting),
            principal: principal.map(str::to_owned),
            bytes,
        })
    }

    fn take(&mut self, principal: Option<&str>, bytes: usize) -> Result<(), Crowded> {
        if bytes > MAX_WAITING_BYTES_PER_PRINCIPAL {
            return Err(Crowded::TooLarge { bytes });
        }
        let share = self
            .shares
            .get(&principal.map(str::to_owned))
            .copied()
            .unwrap_or_default();
        if share.calls >= MAX_WAITING_PER_PRINCIPAL
            || share.bytes + bytes > MAX_WAITING_BYTES_PER_PRINCIPAL
            || self.all.calls >= MAX_WAITING
            || self.all.bytes + bytes > MAX_WAITING_BYTES
        {
            return Err(Crowded::Full);
        }
        let share = self.shares.entry(principal.map(str::to_owned)).or_default();
        share.calls += 1;
        share.bytes += bytes;
        self.all.calls += 1;
        self.all.bytes += bytes;
        Ok(())
    }

    fn give_back(&mut self, principal: Option<String>, bytes: usize) {
        if let Some(share) = self.shares.get_mut(&principal) {
            share.calls -= 1;
            share.bytes -= bytes;
            if share.calls == 0 {
                self.shares.remove(&principal);
            }
        }
        self.all.calls -= 1;
        self.all.bytes -= bytes;
    }
}

/// A call's place among the waiting ones, given back when it is dropped: answered, expired or
/// cancelled.
pub(super) struct WaitingPlace {
    waiting: Arc<Mutex<Waiting>>,
    principal: Option<String>,
    bytes: usize,
}

impl Drop for WaitingPlace {
    fn drop(&mut self) {
        lock(&self.waiting).give_back(self.principal.take(), self.bytes);
    }
}

impl Crowded {
    pub(super) fn into_error(self, tool: &str) -> AgentError {
        match self {
            Self::TooLarge { bytes } => {
                let grant = Grant::confirm(tool);
                AgentError::permission(
                    codes::CONFIRMATION_REQUIRED,
                    format!(
                        "`{tool}` needs confirmation, and these arguments are too large to hold \
                         while the user is asked (about {} KiB; at most {} KiB): the host must \
                         grant `{grant}`",
                        bytes >> 10,
                        MAX_WAITING_BYTES_PER_PRINCIPAL >> 10
                    ),
                )
                .with_details(json!({
                    "grant": grant.as_str(),
                    "argument_bytes": bytes,
                    "max_argument_bytes": MAX_WAITING_BYTES_PER_PRINCIPAL,
                }))
            }
            Self::Full => AgentError::new(
                ErrorCategory::Capacity,
                codes::CAPACITY,
                format!(
                    "too many calls are waiting for the user's confirmation (at most \
                     {MAX_WAITING_PER_PRINCIPAL} and {} MiB of arguments per principal, \
                     {MAX_WAITING} in all); this call of `{tool}` did not run: call again once \
                     one is answered",
                    MAX_WAITING_BYTES_PER_PRINCIPAL >> 20
                ),
            )
            .with_details(json!({
                "max_waiting_per_principal": MAX_WAITING_PER_PRINCIPAL,
                "max_waiting": MAX_WAITING,
            })),
        }
    }
}

/// About what `value` takes in memory once parsed: a value's own bytes per node, its strings,
/// and a map entry's bookkeeping. An estimate that decides whether a call may wait, not an
/// account of the allocator; arguments come validated, so no deeper than the runtime allows.
pub(super) fn weight(value: &Value) -> usize {
    const NODE: usize = size_of::<Value>();
    /// A member's key (a `String`) and its share of a B-tree node.
    const MEMBER: usize = 48;
    NODE + match value {
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(weight).sum(),
        Value::Object(members) => members
            .iter()
            .map(|(name, member)| MEMBER + name.len() + weight(member))
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_calls_are_bounded_per_principal_and_in_all() {
        let waiting = Arc::new(Mutex::new(Waiting::default()));
        let wait = |principal: &str, bytes| Waiting::place(&waiting, Some(principal), bytes);
        let mb = 1 << 20;
        assert_eq!(
            wait("a", 17 * mb).err(),
            Some(Crowded::TooLarge { bytes: 17 * mb })
        );
        let places: Vec<_> = (0..MAX_WAITING_PER_PRINCIPAL)
            .map(|_| wait("a", mb).expect("room"))
            .collect();
        assert_eq!(wait("a", mb).err(), Some(Crowded::Full));
        // Another principal has its own share.
        let other = wait("b", 15 * mb).expect("room");
        assert_eq!(wait("b", 2 * mb).err(), Some(Crowded::Full));
        drop(places);
        drop(other);
        let held = lock(&waiting);
        assert_eq!((held.all.calls, held.all.bytes), (0, 0));
        assert!(held.shares.is_empty());
        drop(held);
        // In all: many principals, one call each.
        let places: Vec<_> = (0..MAX_WAITING)
            .map(|p| wait(&format!("p{p}"), 1).expect("room"))
            .collect();
        assert_eq!(wait("late", 1).err(), Some(Crowded::Full));
        drop(places);
        assert!(wait("late", 1).is_ok());
    }

    #[test]
    fn weight_counts_what_parsing_makes_of_a_value() {
        let numbers = json!(vec![0; 1000]);
        assert!(weight(&numbers) >= 32 * 1000, "{}", weight(&numbers));
        let text = json!("x".repeat(1 << 20));
        assert!(weight(&text) >= 1 << 20);
        assert!(weight(&text) < (1 << 20) + 100);
    }
}
