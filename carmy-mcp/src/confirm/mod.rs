//! Confirmation through the client: an [`Approver`] that puts a call of a tool needing
//! `confirm:<tool>`, which the host did not grant, to the human in front of the client.
//!
//! The runtime decides when to ask (the tool needs confirmation, the host granted none, the
//! arguments are valid); this module only knows how:
//!
//! - 2025-11-25 (and older) sessions: an `elicitation/create` request, awaited in the call.
//! - 2026-07-28 sessions: [`Approval::Ask`], which the mapping turns into an `input_required`
//!   result carrying the question and a sealed `requestState`; the client's retry carries the
//!   answer in `inputResponses` and echoes the state. The state is untrusted, so it is
//!   authenticated (HMAC-SHA256 with a per-server random key, rmcp's `RequestStateCodec`),
//!   bound to the tool, the arguments' digest and the principal, expires, and is single-use.
//!
//! Approved, the call runs once; nothing a client sends can add a grant to the host's context.
//!
//! What a client can make the server hold, and for how long, is bounded:
//!
//! - **A call waiting for its answer** (2025-11-25) keeps its arguments, as the runtime validated
//!   them, until the user answers; the question itself is a short text. The runtime bounds the
//!   wait (`Limits::approval_timeout`, then `CONFIRMATION_TIMEOUT`); whenever the call stops
//!   waiting, at that deadline or cancelled, the question is withdrawn with
//!   `notifications/cancelled`, so a late answer approves nothing ([`Withdraw`]). Only so many
//!   calls may wait at once, per principal and in all, counted in calls and in the bytes of
//!   their arguments ([`Waiting`]): past that, a call is refused at once (`CAPACITY`,
//!   retryable); arguments too large to ever wait are `CONFIRMATION_REQUIRED`.
//! - **A question in flight** (2026-07-28) holds nothing: its state travels with the client.
//! - **Redeemed states** are remembered until they expire, so each is used once. They are kept
//!   per principal ([`Redeemed`]): when one principal has too many, its oldest record is let
//!   go and its states as old or older are refused ("call again"). One principal's flood thus
//!   costs only its own older, unanswered questions, never another principal's, nor a question
//!   asked after the flood.
//!
//! The question is built from the tool's declared input fields (the required ones first), so
//! keys the tool does not declare can never push its target out of what the human reads; the
//! question says how many it left out ([`Summary`]).

use std::{
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use rmcp::{
    RoleServer,
    model::{
        ClientCapabilities, InputResponses, ProtocolVersion, RequestStateCodec, RequestStateError,
        SealOptions,
    },
    service::RequestContext,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod approval;
mod question;
mod redeemed;
mod waiting;

pub(crate) use approval::ClientApproval;
use approval::Round;
use redeemed::Redeemed;
use waiting::{Crowded, Waiting, WaitingPlace};

/// How long a sealed confirmation state stays valid (2026-07-28): the user's time to answer,
/// when nothing waits on the server.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(5 * 60);

/// Per-server state of client confirmation: the sealing key, the states already redeemed and
/// the calls waiting for their users. Shared by every clone of the server (every connection),
/// so a state is single-use, and the bounds hold, across them.
pub(crate) struct ClientConfirmation {
    codec: RequestStateCodec,
    ttl: Duration,
    /// States carry when they were issued, in milliseconds since this instant: a monotonic
    /// clock, so the order of states and their expiry never depend on the wall clock.
    epoch: Instant,
    redeemed: Mutex<Redeemed>,
    waiting: Mutex<Waiting>,
}

impl std::fmt::Debug for ClientConfirmation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfirmation")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// What a sealed state carries. The tool, arguments and principal are not in it: they are the
/// associated data of the seal, re-derived from the retry, so a state moved to another call
/// fails verification.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// Format version: 2.
    v: u8,
    /// When it was issued, in milliseconds since the server's epoch.
    at: u64,
    /// Random: with `at`, names the state.
    n: u64,
}

/// A state's name in the redeemed records, in the order states were issued.
type StateId = (u64, u64);

/// Reasons a state is refused, in terms safe to show a client: they never say which part of
/// the binding differed.
const ALTERED: &str = "it was altered or made for another call";
const EXPIRED: &str = "it expired; call again";
const USED: &str = "it was already used; call again";
const SUPERSEDED: &str =
    "too many newer confirmations were answered since it was asked; call again";
const CROWDED: &str = "too many confirmations are pending; call again shortly";

impl ClientConfirmation {
    pub(crate) fn new() -> Self {
        Self::with_ttl(STATE_TTL)
    }

    pub(crate) fn with_ttl(ttl: Duration) -> Self {
        Self {
            codec: crate::sealing::fresh_codec(),
            ttl,
            epoch: Instant::now(),
            redeemed: Mutex::default(),
            waiting: Mutex::default(),
        }
    }

    /// The approver of one `tools/call`, when its client can put a form to its user; `None`
    /// otherwise, and the runtime answers `CONFIRMATION_REQUIRED` as without this feature.
    pub(crate) fn approver(
        self: &Arc<Self>,
        request: &RequestContext<RoleServer>,
        input_responses: Option<InputResponses>,
        request_state: Option<String>,
    ) -> Option<ClientApproval> {
        if !supports_form(request.client_capabilities().as_ref()) {
            return None;
        }
        let modern = request
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let round = if modern {
            Round::Modern {
                input_responses,
                request_state,
            }
        } else {
            Round::Legacy {
                peer: request.peer.clone(),
            }
        };
        Some(ClientApproval {
            confirmation: Arc::clone(self),
            round,
        })
    }

    /// Milliseconds since the server's epoch.
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// A fresh single-use state, sealed to the call `binding` describes, valid for the TTL.
    fn seal(&self, binding: &[u8]) -> Result<String, RequestStateError> {
        let sealed = Sealed {
            v: 2,
            at: self.now_ms(),
            n: random_u64(),
        };
        let options = SealOptions::new().associated_data(binding).ttl(self.ttl);
        self.codec.seal_json_with(&sealed, &options)
    }

    /// Opens `state` for this call of `principal`'s and marks it used.
    fn redeem(
        &self,
        state: &str,
        binding: &[u8],
        principal: Option<&str>,
    ) -> Result<(), &'static str> {
        let sealed: Sealed =
            self.codec
                .open_json_with(state, binding)
                .map_err(|error| match error {
                    RequestStateError::Expired => EXPIRED,
                    error => {
                        tracing::debug!(%error, "a confirmation state failed verification");
                        ALTERED
                    }
                })?;
        if sealed.v != 2 {
            return Err(ALTERED);
        }
        // Expiry by our own clock as well: a record is let go once its state expires by it, so
        // a state must never outlive its record, whatever the wall clock does.
        let (now, ttl) = (self.now_ms(), self.ttl_ms());
        if sealed.at.saturating_add(ttl) <= now {
            return Err(EXPIRED);
        }
        lock(&self.redeemed).redeem(principal, (sealed.at, sealed.n), now, ttl)
    }

    /// A place among the calls waiting for their users, for a call of `principal`'s whose
    /// arguments weigh `bytes`; freed when dropped.
    fn wait(
        self: &Arc<Self>,
        principal: Option<&str>,
        bytes: usize,
    ) -> Result<WaitingPlace, Crowded> {
        lock(&self.waiting).take(principal, bytes)?;
        Ok(WaitingPlace {
            confirmation: Arc::clone(self),
            principal: principal.map(str::to_owned),
            bytes,
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing is awaited or called out to under these locks, and each update leaves the
    // records consistent, so a poisoned lock is still usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a sealed state is bound to: the tool, the digest of its canonical arguments and the
/// principal, each length-prefixed so no two bindings share bytes.
fn binding(tool: &str, arguments: &Value, principal: Option<&str>) -> Vec<u8> {
    crate::sealing::call_binding(b"carmy/confirm/v1", tool, arguments, principal)
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random number generator");
    u64::from_le_bytes(bytes)
}

/// Form elicitation, stated either way a client may declare it (an empty `elicitation: {}` means
/// form, for clients of 2025-06-18).
fn supports_form(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|capabilities| capabilities.elicitation.as_ref())
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use redeemed::MAX_REDEEMED_PER_PRINCIPAL;
    use serde_json::json;
    use waiting::{MAX_WAITING, MAX_WAITING_PER_PRINCIPAL};

    #[test]
    fn bindings_differ_by_every_part() {
        let args = json!({ "order_id": "ord-1" });
        let base = binding("cancel_order", &args, Some("alice"));
        assert_ne!(base, binding("cancel_orders", &args, Some("alice")));
        assert_ne!(
            base,
            binding(
                "cancel_order",
                &json!({ "order_id": "ord-2" }),
                Some("alice")
            )
        );
        assert_ne!(base, binding("cancel_order", &args, Some("bob")));
        assert_ne!(base, binding("cancel_order", &args, None));
        assert_ne!(
            binding("cancel_order", &args, Some("")),
            binding("cancel_order", &args, None)
        );
        // Key order is not part of a call's identity.
        assert_eq!(
            binding("t", &json!({ "a": 1, "b": 2 }), None),
            binding("t", &json!({ "b": 2, "a": 1 }), None)
        );
    }

    #[test]
    fn a_state_opens_once_for_its_own_call_only() {
        let confirm = ClientConfirmation::new();
        let call = binding(
            "cancel_order",
            &json!({ "order_id": "ord-1" }),
            Some("alice"),
        );
        let state = confirm.seal(&call).unwrap();
        let other = binding(
            "cancel_order",
            &json!({ "order_id": "ord-2" }),
            Some("alice"),
        );
        assert!(
            confirm.redeem(&state, &other, Some("alice")).is_err(),
            "re-targeted"
        );
        let mut tampered = state.clone();
        tampered.pop();
        tampered.push(if state.ends_with('A') { 'B' } else { 'A' });
        assert!(
            confirm.redeem(&tampered, &call, Some("alice")).is_err(),
            "tampered"
        );
        assert_eq!(confirm.redeem(&state, &call, Some("alice")), Ok(()));
        assert_eq!(
            confirm.redeem(&state, &call, Some("alice")),
            Err(USED),
            "replayed"
        );
        // Another server (another key) trusts none of it.
        assert!(
            ClientConfirmation::new()
                .redeem(&state, &call, Some("alice"))
                .is_err()
        );
    }

    #[test]
    fn an_expired_state_is_refused() {
        let confirm = ClientConfirmation::with_ttl(Duration::from_millis(1));
        let call = binding("cancel_order", &json!({}), None);
        let state = confirm.seal(&call).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(confirm.redeem(&state, &call, None), Err(EXPIRED));
    }

    #[test]
    fn a_flood_costs_the_flooder_its_older_questions_only() {
        let confirm = ClientConfirmation::new();
        let call = binding("t", &json!({}), Some("alice"));
        let mallory = binding("t", &json!({}), Some("mallory"));
        let anonymous = binding("t", &json!({}), None);
        // Asked before the flood, answered after it.
        let alices = confirm.seal(&call).unwrap();
        let anonymous_state = confirm.seal(&anonymous).unwrap();
        let mallorys_old = confirm.seal(&mallory).unwrap();
        // States are ordered by the millisecond they were issued in.
        std::thread::sleep(Duration::from_millis(2));
        for _ in 0..3 * MAX_REDEEMED_PER_PRINCIPAL {
            let state = confirm.seal(&mallory).unwrap();
            assert_eq!(confirm.redeem(&state, &mallory, Some("mallory")), Ok(()));
        }
        let redeemed = lock(&confirm.redeemed);
        assert_eq!(
            redeemed.records(Some("mallory")),
            MAX_REDEEMED_PER_PRINCIPAL
        );
        assert_eq!(redeemed.held, MAX_REDEEMED_PER_PRINCIPAL);
        drop(redeemed);
        assert_eq!(confirm.redeem(&alices, &call, Some("alice")), Ok(()));
        assert_eq!(confirm.redeem(&anonymous_state, &anonymous, None), Ok(()));
        // Mallory's own question from before the flood: refused, never accepted twice.
        assert_eq!(
            confirm.redeem(&mallorys_old, &mallory, Some("mallory")),
            Err(SUPERSEDED)
        );
        // Asked after the flood: fine.
        std::thread::sleep(Duration::from_millis(2));
        let fresh = confirm.seal(&mallory).unwrap();
        assert_eq!(confirm.redeem(&fresh, &mallory, Some("mallory")), Ok(()));
        assert_eq!(confirm.redeem(&fresh, &mallory, Some("mallory")), Err(USED));
    }

    #[test]
    fn waiting_calls_are_bounded_per_principal_and_in_all() {
        let confirm = Arc::new(ClientConfirmation::new());
        let mb = 1 << 20;
        assert_eq!(
            confirm.wait(Some("a"), 17 * mb).err(),
            Some(Crowded::TooLarge { bytes: 17 * mb })
        );
        let places: Vec<_> = (0..MAX_WAITING_PER_PRINCIPAL)
            .map(|_| confirm.wait(Some("a"), mb).expect("room"))
            .collect();
        assert_eq!(confirm.wait(Some("a"), mb).err(), Some(Crowded::Full));
        // Another principal has its own share.
        let other = confirm.wait(Some("b"), 15 * mb).expect("room");
        assert_eq!(confirm.wait(Some("b"), 2 * mb).err(), Some(Crowded::Full));
        drop(places);
        drop(other);
        let waiting = lock(&confirm.waiting);
        assert_eq!((waiting.all.calls, waiting.all.bytes), (0, 0));
        assert!(waiting.shares.is_empty());
        drop(waiting);
        // In all: many principals, one call each.
        let places: Vec<_> = (0..MAX_WAITING)
            .map(|p| confirm.wait(Some(&format!("p{p}")), 1).expect("room"))
            .collect();
        assert_eq!(confirm.wait(Some("late"), 1).err(), Some(Crowded::Full));
        drop(places);
        assert!(confirm.wait(Some("late"), 1).is_ok());
    }
}
