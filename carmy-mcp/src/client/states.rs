//! Sealed request states (2026-07-28): what a client echoes in `requestState` so that the next
//! round of a call knows the answers of the earlier ones.
//!
//! The state is untrusted, so it is authenticated (HMAC-SHA256, rmcp's `RequestStateCodec`,
//! with the server's [`StateKeys`]: shared by replicas, or a random key of one process), bound to the request it was issued for (the method, the
//! tool's or prompt's name, the arguments' digest and the principal, as associated data), and
//! expires. It carries the answers so far, a confirmation among them, and a name: a state that
//! carries a confirmation is redeemed once, so one approval runs one call.
//!
//! Redeemed states are remembered until they expire by the runtime's
//! [`RedemptionStore`](carmy_core::RedemptionStore): the configured store, so replicas sharing
//! it redeem a state once whichever of them sees it. When one principal has too many, its oldest
//! record is let go and its states as old or older are refused ("call again"). One principal's
//! flood thus costs only its own older, unanswered questions, never another principal's, nor a
//! question asked after the flood.

use std::{
    collections::BTreeMap,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use carmy_core::{AgentError, Fingerprint, Redemption, RedemptionKey, Redemptions, codes};
use rmcp::model::{RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::keys::StateKeys;

/// How long a state stays valid: the user's time to answer, while nothing waits on the server.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(10 * 60);

/// Reasons a state is refused, in terms safe to show a client: they never say which part of
/// the binding differed.
pub(super) const ALTERED: &str = "it was altered or made for another call";
pub(super) const EXPIRED: &str = "it expired; call again";
const USED: &str = "it was already used; call again";
const SUPERSEDED: &str =
    "too many newer confirmations were answered since it was asked; call again";
const CROWDED: &str = "too many confirmations are pending; call again shortly";

/// A state's name: when it was issued and its nonce, in the order states were issued.
pub(super) type StateId = (u64, u64);

/// What a sealed state carries. The request it was issued for is not in it: that is the
/// associated data of the seal, re-derived from the retry, so a state moved to another call
/// fails verification.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// Format version: 3.
    v: u8,
    /// When it was issued, in milliseconds since the UNIX epoch: replicas read it too.
    at: u64,
    /// Random: with `at`, names the state.
    n: u64,
    /// The answers of the earlier rounds, by the key they were asked with.
    answers: BTreeMap<String, Value>,
}

/// A state that passed verification.
pub(super) struct Opened {
    pub(super) id: StateId,
    pub(super) answers: BTreeMap<String, Value>,
}

/// The server's sealing keys, and the states already redeemed. Shared by every clone of the
/// server (every connection), so a state is single-use across them.
pub(super) struct States {
    keys: StateKeys,
    ttl: Duration,
    redemptions: Redemptions,
}

impl States {
    pub(super) fn new(ttl: Duration, keys: StateKeys, redemptions: Redemptions) -> Self {
        Self {
            keys,
            ttl,
            redemptions,
        }
    }

    /// The keys that seal and open states.
    pub(super) fn keys(&self) -> &StateKeys {
        &self.keys
    }

    /// Where states are redeemed.
    pub(super) fn redemptions(&self) -> &Redemptions {
        &self.redemptions
    }

    /// Milliseconds since the UNIX epoch: the clock every replica reads the same way (the seal's
    /// own expiry is by it too).
    fn now_ms(&self) -> u64 {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// A fresh state carrying `answers`, sealed to the request `binding` describes.
    pub(super) fn seal(
        &self,
        answers: &BTreeMap<String, Value>,
        binding: &[u8],
    ) -> Result<String, RequestStateError> {
        let sealed = Sealed {
            v: 3,
            at: self.now_ms(),
            n: random_u64(),
            answers: answers.clone(),
        };
        let options = SealOptions::new().associated_data(binding).ttl(self.ttl);
        self.keys.codec().seal_json_with(&sealed, &options)
    }

    /// Opens `state` for the request `binding` describes.
    pub(super) fn open(&self, state: &str, binding: &[u8]) -> Result<Opened, &'static str> {
        let sealed: Sealed = self
            .keys
            .codec()
            .open_json_with(state, binding)
            .map_err(|error| match error {
                RequestStateError::Expired => EXPIRED,
                error => {
                    tracing::debug!(%error, "a request state failed verification");
                    ALTERED
                }
            })?;
        if sealed.v != 3 {
            return Err(ALTERED);
        }
        // Expiry by the clock the redeemed records are let go by, so a state never outlives its
        // record. (A clock set back by more than the seal's own margin could let a state open
        // again after its record went: keep replicas' clocks synchronised.)
        if sealed.at.saturating_add(self.ttl_ms()) <= self.now_ms() {
            return Err(EXPIRED);
        }
        Ok(Opened {
            id: (sealed.at, sealed.n),
            answers: sealed.answers,
        })
    }

    /// Marks the state `id` of `principal`'s used, the first time only, in the runtime's
    /// store; a later use is the call's `CONFIRMATION_INVALID` (of `tool`), a store that cannot
    /// answer its `STORE_UNAVAILABLE` (retryable): the call does not run unchecked.
    pub(super) async fn redeem(
        &self,
        id: StateId,
        principal: Option<&str>,
        tool: &str,
    ) -> Result<(), AgentError> {
        let (at, nonce) = id;
        let key = RedemptionKey::new(principal, at, nonce);
        let redeemed = self.redemptions.redeem(&key, self.ttl, self.now_ms()).await;
        let reason = match redeemed {
            Ok(Redemption::Redeemed) => return Ok(()),
            Ok(Redemption::AlreadyUsed) => USED,
            Ok(Redemption::Superseded) => SUPERSEDED,
            Ok(Redemption::Crowded) => CROWDED,
            Err(error) => {
                tracing::warn!(%error, "the store could not redeem a request state");
                return Err(AgentError::unavailable(
                    codes::STORE_UNAVAILABLE,
                    "the confirmation could not be checked as unused, so the call did not run; \
                     retry shortly",
                ));
            }
        };
        Err(AgentError::confirmation_invalid(tool, reason))
    }
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random number generator");
    u64::from_le_bytes(bytes)
}

/// What a state is bound to: the request it was issued for.
#[derive(Clone, Copy)]
pub(crate) struct Binding<'a> {
    /// `tools/call` or `prompts/get`.
    pub(crate) method: &'static str,
    /// The tool's or the prompt's name.
    pub(crate) name: &'a str,
    pub(crate) arguments: &'a Value,
    pub(crate) principal: Option<&'a str>,
}

impl Binding<'_> {
    /// The associated data of a state: the method, the name, the arguments' digest and the
    /// principal, each length-prefixed, so no two requests share bytes.
    pub(super) fn bytes(&self) -> Vec<u8> {
        let digest = Fingerprint::of(self.name, self.arguments);
        let mut out = Vec::with_capacity(112);
        out.extend_from_slice(b"carmy/request-state/v1");
        for part in [
            self.method.as_bytes(),
            self.name.as_bytes(),
            digest.as_bytes(),
            self.principal.map_or(&b"\xff"[..], str::as_bytes),
        ] {
            out.extend_from_slice(&(part.len() as u64).to_le_bytes());
            out.extend_from_slice(part);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// States sealed with `keys`, redeemed in the memory store of a fresh runtime.
    fn fresh(ttl: Duration, keys: &StateKeys) -> States {
        let runtime = carmy_core::Carmy::new().build().expect("an empty runtime");
        States::new(ttl, keys.clone(), runtime.redemptions().clone())
    }

    fn call<'a>(arguments: &'a Value, principal: Option<&'a str>) -> Vec<u8> {
        binding("cancel_order", arguments, principal)
    }

    fn binding<'a>(name: &'a str, arguments: &'a Value, principal: Option<&'a str>) -> Vec<u8> {
        Binding {
            method: "tools/call",
            name,
            arguments,
            principal,
        }
        .bytes()
    }

    #[test]
    fn bindings_differ_by_every_part() {
        let args = json!({ "order_id": "ord-1" });
        let base = call(&args, Some("alice"));
        assert_ne!(base, binding("cancel_orders", &args, Some("alice")));
        assert_ne!(base, call(&json!({ "order_id": "ord-2" }), Some("alice")));
        assert_ne!(base, call(&args, Some("bob")));
        assert_ne!(base, call(&args, None));
        assert_ne!(call(&args, Some("")), call(&args, None));
        let prompt = Binding {
            method: "prompts/get",
            name: "cancel_order",
            arguments: &args,
            principal: Some("alice"),
        };
        assert_ne!(base, prompt.bytes());
        // Key order is not part of a call's identity.
        assert_eq!(
            binding("t", &json!({ "a": 1, "b": 2 }), None),
            binding("t", &json!({ "b": 2, "a": 1 }), None)
        );
    }

    #[tokio::test]
    async fn a_state_opens_for_its_own_call_only_and_is_redeemed_once() {
        let states = fresh(STATE_TTL, &StateKeys::random());
        let args = json!({ "order_id": "ord-1" });
        let this = call(&args, Some("alice"));
        let answers = BTreeMap::from([("q".to_owned(), json!({ "action": "accept" }))]);
        let state = states.seal(&answers, &this).unwrap();
        let other = call(&json!({ "order_id": "ord-2" }), Some("alice"));
        assert_eq!(
            states.open(&state, &other).err(),
            Some(ALTERED),
            "re-targeted"
        );
        let mut tampered = state.clone();
        tampered.pop();
        tampered.push(if state.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(states.open(&tampered, &this).err(), Some(ALTERED));
        let opened = states.open(&state, &this).expect("its own call");
        assert_eq!(opened.answers, answers);
        assert_eq!(states.redeem(opened.id, Some("alice"), "t").await, Ok(()));
        let replayed = states
            .redeem(opened.id, Some("alice"), "t")
            .await
            .unwrap_err();
        assert_eq!(replayed.code(), codes::CONFIRMATION_INVALID);
        assert!(replayed.message().contains(USED), "{replayed:?}");
        // Another server (another key) trusts none of it.
        assert_eq!(
            fresh(STATE_TTL, &StateKeys::random())
                .open(&state, &this)
                .err(),
            Some(ALTERED)
        );
    }

    #[test]
    fn replicas_holding_the_keys_open_each_others_states_through_a_rotation() {
        const OLD: &str = "old b2xkLXJlcXVlc3Qtc3RhdGUta2V5LWF0LWxlYXN0LTMyYg==";
        const NEW: &str = "new bmV3LXJlcXVlc3Qtc3RhdGUta2V5LWF0LWxlYXN0LTMyYg==";
        let replica = |file: &str| fresh(STATE_TTL, &StateKeys::parse(file).unwrap());
        let this = call(&json!({ "order_id": "ord-1" }), Some("alice"));
        let none = BTreeMap::new();
        // Before: every replica seals and opens with the old key.
        let before = replica(OLD);
        let asked = before.seal(&none, &this).unwrap();
        assert!(replica(OLD).open(&asked, &this).is_ok());
        // Step 1, the new key added after the old: still sealed with the old.
        let added = replica(&format!("{OLD}\n{NEW}"));
        let added_seals = added.seal(&none, &this).unwrap();
        assert!(before.open(&added_seals, &this).is_ok());
        // Step 2, the new key first: replicas of step 1 open what it seals, and it opens
        // what the replicas before the rotation sealed.
        let promoted = replica(&format!("{NEW}\n{OLD}"));
        let promoted_seals = promoted.seal(&none, &this).unwrap();
        assert!(added.open(&promoted_seals, &this).is_ok());
        assert!(promoted.open(&asked, &this).is_ok());
        // Step 3, the old key retired: what it sealed opens no more, the new key's does.
        let retired = replica(NEW);
        assert_eq!(retired.open(&asked, &this).err(), Some(ALTERED));
        assert!(retired.open(&promoted_seals, &this).is_ok());
        // A process's own key opens nothing sealed with the shared ones.
        let alone = fresh(STATE_TTL, &StateKeys::random());
        assert_eq!(alone.open(&promoted_seals, &this).err(), Some(ALTERED));
    }

    #[test]
    fn an_expired_state_is_refused() {
        let states = fresh(Duration::from_millis(1), &StateKeys::random());
        let this = call(&json!({}), None);
        let state = states.seal(&BTreeMap::new(), &this).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(states.open(&state, &this).err(), Some(EXPIRED));
    }
}
