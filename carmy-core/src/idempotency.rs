//! Idempotency by request id: one execution per (principal, request id), its outcome replayed
//! to every retry.

use std::{
    collections::{HashMap, VecDeque},
    fmt,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::{
    error::AgentError,
    execution::{ExecutionId, ExecutionStatus},
};

/// Who asked, and which request: retries of one request share a key, whatever connection they
/// arrive on. Keys of different principals never meet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    principal: Arc<str>,
    request_id: Arc<str>,
}

impl IdempotencyKey {
    /// The key of `request_id` sent by `principal` (`None`: the anonymous principal).
    pub fn new(principal: Option<&str>, request_id: &str) -> Self {
        Self {
            principal: principal.unwrap_or_default().into(),
            request_id: request_id.into(),
        }
    }

    /// The principal, empty for anonymous callers.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The request id.
    pub fn request_id(&self) -> &str {
        &self.request_id
    }
}

/// What a call is: the tool and its canonical arguments, hashed. The same request id with another
/// fingerprint is a different call, and a conflict.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// SHA-256 of the tool name and the arguments in canonical JSON (object keys sorted, no
    /// whitespace), so key order and formatting never make two equal calls differ.
    pub fn of(tool: &str, arguments: &Value) -> Self {
        let mut canonical = String::with_capacity(64);
        write_canonical(arguments, &mut canonical);
        let mut hasher = Sha256::new();
        hasher.update((tool.len() as u64).to_le_bytes());
        hasher.update(tool.as_bytes());
        hasher.update(canonical.as_bytes());
        Self(hasher.finalize().into())
    }

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in &self.0[..8] {
            write!(f, "{byte:02x}")?;
        }
        f.write_str("…")
    }
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (name, member)) in sorted.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                write_canonical(member, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // -0.0 and 0.0 are equal JSON values (and equal numbers); one call, one fingerprint.
        Value::Number(number) if number.as_f64() == Some(0.0) && number.is_f64() => {
            out.push_str("0.0");
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// A finished execution's outcome, kept for replay.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The execution that produced it.
    pub execution_id: ExecutionId,
    /// How it ended (`succeeded` or `failed`).
    pub status: ExecutionStatus,
    /// The output or the error, replayed as is.
    pub result: Result<Value, AgentError>,
}

/// Resolves when a running execution with the same key finishes or gives up its claim.
pub type Waiter = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The answer to [`IdempotencyStore::claim`].
pub enum Claim {
    /// Nobody ran this request yet: run it, then [`finish`](IdempotencyStore::finish) or
    /// [`interrupt`](IdempotencyStore::interrupt).
    Acquired,
    /// It ran and finished: replay this.
    Finished(Recorded),
    /// It is running now: wait, then claim again.
    Running(Waiter),
    /// The request id was used for another call.
    Conflict,
    /// It was interrupted after it may have had effects.
    Uncertain(ExecutionStatus),
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Acquired => f.write_str("Acquired"),
            Self::Finished(recorded) => f.debug_tuple("Finished").field(recorded).finish(),
            Self::Running(_) => f.write_str("Running"),
            Self::Conflict => f.write_str("Conflict"),
            Self::Uncertain(status) => f.debug_tuple("Uncertain").field(status).finish(),
        }
    }
}

/// Where claims and outcomes live. The default, [`MemoryStore`], is per process; implement this
/// over a shared database to keep idempotency across restarts and replicas.
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Claims `key` for a call with `fingerprint`, or says what became of an earlier claim.
    /// Fails closed with `CAPACITY` rather than forgetting a live claim.
    fn claim(&self, key: &IdempotencyKey, fingerprint: Fingerprint) -> Result<Claim, AgentError>;

    /// Records the outcome of the claimed execution and wakes the waiters.
    fn finish(&self, key: &IdempotencyKey, recorded: Recorded);

    /// The claimed execution stopped before finishing. When `uncertain`, it may have had effects
    /// and retries get `EXECUTION_UNCERTAIN`; otherwise the claim is released and the next
    /// retry runs anew.
    fn interrupt(&self, key: &IdempotencyKey, status: ExecutionStatus, uncertain: bool);
}

/// Bounds of the in-memory store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStoreLimits {
    /// Most keys kept at once (default 10,000). Past it the oldest finished keys are forgotten;
    /// when every key is still running, claims fail with `CAPACITY`.
    pub max_entries: usize,
    /// How long a finished key is kept (default 24 hours).
    pub ttl: Duration,
}

impl Default for MemoryStoreLimits {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            ttl: Duration::from_secs(24 * 60 * 60),
        }
    }
}

/// The default store: in memory, bounded by count and age.
pub struct MemoryStore {
    limits: MemoryStoreLimits,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<IdempotencyKey, Entry>,
    /// Keys in claim order, with the sequence number that makes stale queue slots detectable.
    order: VecDeque<(u64, IdempotencyKey)>,
    next_seq: u64,
}

struct Entry {
    seq: u64,
    claimed_at: Instant,
    fingerprint: Fingerprint,
    state: EntryState,
}

enum EntryState {
    Running(watch::Sender<()>),
    Finished(Recorded),
    Uncertain(ExecutionStatus),
}

impl MemoryStore {
    /// A store with the given bounds.
    pub fn new(limits: MemoryStoreLimits) -> Self {
        Self {
            limits,
            inner: Mutex::new(Entries::default()),
        }
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves the maps consistent (no invariant spans two
        // statements), so a poisoned lock is still usable.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(MemoryStoreLimits::default())
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("limits", &self.limits)
            .field("len", &self.len())
            .finish()
    }
}

impl Entries {
    /// Forgets expired keys, then the oldest finished ones until there is room for one more.
    /// Running keys are never forgotten.
    fn make_room(&mut self, limits: &MemoryStoreLimits, now: Instant) -> bool {
        let mut requeued = 0;
        while let Some((seq, key)) = self.order.pop_front() {
            let Some(entry) = self.by_key.get(&key) else {
                continue; // removed already
            };
            if entry.seq != seq {
                continue; // a stale slot: the key was claimed again later
            }
            let expired = now.duration_since(entry.claimed_at) >= limits.ttl;
            let full = self.by_key.len() >= limits.max_entries;
            if !expired && !full {
                self.order.push_front((seq, key));
                return true;
            }
            if matches!(entry.state, EntryState::Running(_)) {
                // Live: keep it, and look past it.
                self.order.push_back((seq, key));
                requeued += 1;
                if requeued > self.by_key.len() {
                    break;
                }
                continue;
            }
            self.by_key.remove(&key);
        }
        self.by_key.len() < limits.max_entries
    }
}

impl IdempotencyStore for MemoryStore {
    fn claim(&self, key: &IdempotencyKey, fingerprint: Fingerprint) -> Result<Claim, AgentError> {
        let now = Instant::now();
        let mut entries = self.lock();
        if let Some(entry) = entries.by_key.get(key) {
            let expired = !matches!(entry.state, EntryState::Running(_))
                && now.duration_since(entry.claimed_at) >= self.limits.ttl;
            if !expired {
                if entry.fingerprint != fingerprint {
                    return Ok(Claim::Conflict);
                }
                return Ok(match &entry.state {
                    EntryState::Finished(recorded) => Claim::Finished(recorded.clone()),
                    EntryState::Uncertain(status) => Claim::Uncertain(*status),
                    EntryState::Running(sender) => {
                        let mut receiver = sender.subscribe();
                        Claim::Running(Box::pin(async move {
                            // Resolves on finish (a send) or release (the sender dropped).
                            let _ = receiver.changed().await;
                        }))
                    }
                });
            }
            entries.by_key.remove(key);
        }
        if !entries.make_room(&self.limits, now) {
            return Err(AgentError::capacity(
                "too many requests with a request id are running; retry later",
            ));
        }
        let seq = entries.next_seq;
        entries.next_seq += 1;
        entries.order.push_back((seq, key.clone()));
        let (sender, _) = watch::channel(());
        entries.by_key.insert(
            key.clone(),
            Entry {
                seq,
                claimed_at: now,
                fingerprint,
                state: EntryState::Running(sender),
            },
        );
        Ok(Claim::Acquired)
    }

    fn finish(&self, key: &IdempotencyKey, recorded: Recorded) {
        let mut entries = self.lock();
        if let Some(entry) = entries.by_key.get_mut(key) {
            let previous = std::mem::replace(&mut entry.state, EntryState::Finished(recorded));
            if let EntryState::Running(sender) = previous {
                let _ = sender.send(());
            }
        }
    }

    fn interrupt(&self, key: &IdempotencyKey, status: ExecutionStatus, uncertain: bool) {
        let mut entries = self.lock();
        if uncertain {
            if let Some(entry) = entries.by_key.get_mut(key) {
                let previous = std::mem::replace(&mut entry.state, EntryState::Uncertain(status));
                if let EntryState::Running(sender) = previous {
                    let _ = sender.send(());
                }
            }
        } else {
            // Dropping the sender wakes the waiters, whose next claim runs the call anew.
            entries.by_key.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded(id: &str) -> Recorded {
        Recorded {
            execution_id: ExecutionId::from(id),
            status: ExecutionStatus::Succeeded,
            result: Ok(json!({ "ok": true })),
        }
    }

    #[test]
    fn fingerprint_ignores_key_order_and_whitespace() {
        let a = Fingerprint::of("t", &json!({ "a": 1, "b": { "x": [1, 2], "y": "s" } }));
        let b: Value = serde_json::from_str(r#"{ "b": {"y":"s","x":[1,2]}, "a":1 }"#).unwrap();
        assert_eq!(a, Fingerprint::of("t", &b));
        assert_ne!(a, Fingerprint::of("u", &b));
        assert_ne!(
            Fingerprint::of("t", &json!({ "a": 1 })),
            Fingerprint::of("t", &json!({ "a": 2 }))
        );
        // Found by the `fingerprint` fuzz target: equal values, one fingerprint.
        assert_eq!(
            Fingerprint::of("t", &json!({ "x": -0.0 })),
            Fingerprint::of("t", &json!({ "x": 0.0 }))
        );
        assert_ne!(
            Fingerprint::of("t", &json!({ "x": 0.0 })),
            Fingerprint::of("t", &json!({ "x": 0 }))
        );
        // A tool name cannot bleed into the arguments.
        assert_ne!(
            Fingerprint::of("ab", &json!("c")),
            Fingerprint::of("a", &json!("bc"))
        );
    }

    #[test]
    fn claim_finish_replay_conflict() {
        let store = MemoryStore::default();
        let key = IdempotencyKey::new(Some("alice"), "r1");
        let fp = Fingerprint::of("t", &json!({}));
        assert!(matches!(store.claim(&key, fp), Ok(Claim::Acquired)));
        assert!(matches!(store.claim(&key, fp), Ok(Claim::Running(_))));
        store.finish(&key, recorded("exec_1"));
        match store.claim(&key, fp) {
            Ok(Claim::Finished(r)) => assert_eq!(r.execution_id.as_str(), "exec_1"),
            other => panic!("{other:?}"),
        }
        let other = Fingerprint::of("t", &json!({ "x": 1 }));
        assert!(matches!(store.claim(&key, other), Ok(Claim::Conflict)));
        // Another principal's key is another key.
        let bob = IdempotencyKey::new(Some("bob"), "r1");
        assert!(matches!(store.claim(&bob, other), Ok(Claim::Acquired)));
    }

    #[test]
    fn interrupt_releases_or_marks_uncertain() {
        let store = MemoryStore::default();
        let fp = Fingerprint::of("t", &json!({}));
        let key = IdempotencyKey::new(None, "released");
        store.claim(&key, fp).unwrap();
        store.interrupt(&key, ExecutionStatus::Cancelled, false);
        assert!(matches!(store.claim(&key, fp), Ok(Claim::Acquired)));

        let key = IdempotencyKey::new(None, "uncertain");
        store.claim(&key, fp).unwrap();
        store.interrupt(&key, ExecutionStatus::TimedOut, true);
        assert!(matches!(
            store.claim(&key, fp),
            Ok(Claim::Uncertain(ExecutionStatus::TimedOut))
        ));
    }

    #[test]
    fn bounded_store_forgets_finished_keys_and_fails_closed_on_running_ones() {
        let store = MemoryStore::new(MemoryStoreLimits {
            max_entries: 2,
            ttl: Duration::from_secs(60),
        });
        let fp = Fingerprint::of("t", &json!({}));
        let k = |id: &str| IdempotencyKey::new(None, id);
        store.claim(&k("a"), fp).unwrap();
        store.finish(&k("a"), recorded("exec_a"));
        store.claim(&k("b"), fp).unwrap(); // running
        // Full: "a" (finished, oldest) makes room for "c".
        assert!(matches!(store.claim(&k("c"), fp), Ok(Claim::Acquired)));
        assert_eq!(store.len(), 2);
        assert!(matches!(store.claim(&k("a"), fp), Err(err) if err.code() == "CAPACITY"));
        // Both live claims are still there.
        assert!(matches!(store.claim(&k("b"), fp), Ok(Claim::Running(_))));
        assert!(matches!(store.claim(&k("c"), fp), Ok(Claim::Running(_))));
    }

    #[test]
    fn expired_keys_are_forgotten() {
        let store = MemoryStore::new(MemoryStoreLimits {
            max_entries: 10,
            ttl: Duration::ZERO,
        });
        let fp = Fingerprint::of("t", &json!({}));
        let key = IdempotencyKey::new(None, "old");
        store.claim(&key, fp).unwrap();
        store.finish(&key, recorded("exec_old"));
        assert!(matches!(store.claim(&key, fp), Ok(Claim::Acquired)));
    }
}
