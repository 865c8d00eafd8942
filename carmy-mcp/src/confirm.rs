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
    collections::{BTreeSet, HashMap},
    io,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use carmy_core::{
    AgentError, Approval, ApprovalRequest, Approver, ErrorCategory, Fingerprint, Grant, Question,
    codes,
};
use rmcp::{
    Peer, RoleServer,
    model::{
        CancelledNotification, CancelledNotificationParam, ClientCapabilities, ClientResult,
        ElicitResult, InputResponses, ProtocolVersion, RequestId, RequestStateCodec,
        RequestStateError, SealOptions, ServerNotification, ServerRequest,
    },
    service::{PeerRequestOptions, RequestContext},
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::mapping::{CONFIRM_INPUT_KEY, approves, confirmation_request};

/// How long a sealed confirmation state stays valid (2026-07-28): the user's time to answer,
/// when nothing waits on the server.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(5 * 60);

/// Calls of one principal that may wait for the user at once (2025-11-25). On stdio the
/// principal is the session's: a client is seldom asked more than a few questions at a time.
const MAX_WAITING_PER_PRINCIPAL: usize = 4;
/// Bytes of arguments the waiting calls of one principal may hold, as [`weight`] counts them;
/// a call whose arguments weigh more can never wait.
const MAX_WAITING_BYTES_PER_PRINCIPAL: usize = 16 << 20;
/// Calls that may wait for their users at once, every principal together.
const MAX_WAITING: usize = 64;
/// Bytes of arguments all waiting calls together may hold.
const MAX_WAITING_BYTES: usize = 64 << 20;

/// Redeemed states remembered per principal; past it, the oldest record is let go.
const MAX_REDEEMED_PER_PRINCIPAL: usize = 1024;
/// Redeemed states remembered in all; past it, the principal with the most loses its oldest.
const MAX_REDEEMED: usize = 64 * 1024;
/// Principals whose redeemed states are remembered at once. A new one past it, while every
/// record is still live, is refused: the bound holds by failing closed, never by forgetting.
const MAX_REDEEMING_PRINCIPALS: usize = 4096;

/// Longest argument summary shown to the human, in characters (its first field always shows).
const SUMMARY_CHARS: usize = 300;
/// Longest single value in the summary, in characters.
const VALUE_CHARS: usize = 80;
/// Longest key in the summary, in characters (keys are data only when the schema declares none).
const KEY_CHARS: usize = 40;

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
        let mut key = [0u8; 32];
        // Without randomness there is no safe key; a server that cannot read the OS's RNG cannot
        // run anything else that matters either.
        getrandom::fill(&mut key).expect("the operating system's random number generator");
        Self {
            codec: RequestStateCodec::new_unchecked(key.to_vec()),
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

// --- Redeemed states ---------------------------------------------------------------------------

/// The states already redeemed, per principal, until they expire.
#[derive(Default)]
struct Redeemed {
    anonymous: Window,
    principals: HashMap<Box<str>, Window>,
    /// Records in every window.
    held: usize,
}

/// One principal's redeemed states.
#[derive(Default)]
struct Window {
    /// Redeemed, oldest first.
    used: BTreeSet<StateId>,
    /// States issued at or before it are refused: a record that old may have been let go.
    floor: Option<StateId>,
}

impl Window {
    /// Lets go of the records of expired states, which are refused on their age alone; returns
    /// how many.
    fn prune(&mut self, now: u64, ttl: u64) -> usize {
        let mut pruned = 0;
        while let Some(&(at, _)) = self.used.first()
            && at.saturating_add(ttl) <= now
        {
            self.used.pop_first();
            pruned += 1;
        }
        if self
            .floor
            .is_some_and(|(at, _)| at.saturating_add(ttl) <= now)
        {
            self.floor = None;
        }
        pruned
    }

    /// Lets go of the oldest record, refusing from now on every state as old.
    fn let_go_oldest(&mut self) -> bool {
        match self.used.pop_first() {
            Some(oldest) => {
                // The oldest record is newer than the floor, so the floor only moves forward.
                self.floor = Some(oldest);
                true
            }
            None => false,
        }
    }

    fn is_idle(&self) -> bool {
        self.used.is_empty() && self.floor.is_none()
    }
}

impl Redeemed {
    fn redeem(
        &mut self,
        principal: Option<&str>,
        state: StateId,
        now: u64,
        ttl: u64,
    ) -> Result<(), &'static str> {
        let window = match principal {
            None => &mut self.anonymous,
            Some(principal) => {
                if !self.principals.contains_key(principal) {
                    if self.principals.len() >= MAX_REDEEMING_PRINCIPALS {
                        self.sweep(now, ttl);
                        if self.principals.len() >= MAX_REDEEMING_PRINCIPALS {
                            return Err(CROWDED);
                        }
                    }
                    self.principals.insert(principal.into(), Window::default());
                }
                self.principals
                    .get_mut(principal)
                    .expect("the principal's window was just made")
            }
        };
        let pruned = window.prune(now, ttl);
        self.held -= pruned;
        if window.floor.is_some_and(|floor| state <= floor) {
            return Err(SUPERSEDED);
        }
        if !window.used.insert(state) {
            return Err(USED);
        }
        self.held += 1;
        if window.used.len() > MAX_REDEEMED_PER_PRINCIPAL && window.let_go_oldest() {
            self.held -= 1;
        }
        while self.held > MAX_REDEEMED {
            self.sweep(now, ttl);
            if self.held <= MAX_REDEEMED {
                break;
            }
            // The principal with the most records pays: with the bounds above, it holds at
            // least `MAX_REDEEMED / MAX_REDEEMING_PRINCIPALS` of them.
            let fullest = self
                .principals
                .values_mut()
                .chain(std::iter::once(&mut self.anonymous))
                .max_by_key(|window| window.used.len());
            match fullest {
                Some(window) if !window.used.is_empty() => {
                    window.let_go_oldest();
                    self.held -= 1;
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// Lets go of every expired record, and of the principals left with none.
    fn sweep(&mut self, now: u64, ttl: u64) {
        let mut pruned = self.anonymous.prune(now, ttl);
        self.principals.retain(|_, window| {
            pruned += window.prune(now, ttl);
            !window.is_idle()
        });
        self.held -= pruned;
    }

    #[cfg(test)]
    fn records(&self, principal: Option<&str>) -> usize {
        match principal {
            None => self.anonymous.used.len(),
            Some(principal) => self.principals.get(principal).map_or(0, |w| w.used.len()),
        }
    }
}

// --- Calls waiting for their users (2025-11-25) ----------------------------------------------

/// The calls waiting for their users' answers, per principal and in all.
#[derive(Default)]
struct Waiting {
    shares: HashMap<Option<String>, Share>,
    all: Share,
}

/// What some waiting calls hold.
#[derive(Clone, Copy, Debug, Default)]
struct Share {
    calls: usize,
    bytes: usize,
}

/// Why a call may not wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Crowded {
    /// Its arguments weigh more than one principal's waiting calls may hold: never.
    TooLarge { bytes: usize },
    /// Enough calls wait already: once one is answered.
    Full,
}

impl Waiting {
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
struct WaitingPlace {
    confirmation: Arc<ClientConfirmation>,
    principal: Option<String>,
    bytes: usize,
}

impl Drop for WaitingPlace {
    fn drop(&mut self) {
        lock(&self.confirmation.waiting).give_back(self.principal.take(), self.bytes);
    }
}

impl Crowded {
    fn into_error(self, tool: &str) -> AgentError {
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
fn weight(value: &Value) -> usize {
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

// --- The approver ------------------------------------------------------------------------------

/// Asks the human in front of the client about one call.
pub(crate) struct ClientApproval {
    confirmation: Arc<ClientConfirmation>,
    round: Round,
}

/// How this session's client is asked.
enum Round {
    /// 2025-11-25 and older: a request to the client, awaited.
    Legacy { peer: Peer<RoleServer> },
    /// 2026-07-28: a question in the answer, and the answer in the retry.
    Modern {
        input_responses: Option<InputResponses>,
        request_state: Option<String>,
    },
}

impl Approver for ClientApproval {
    async fn approve(&self, request: ApprovalRequest<'_>) -> Approval {
        let tool = request.tool().name();
        let principal = request.context().principal();
        let answer = match &self.round {
            Round::Legacy { peer } => {
                // The runtime keeps the arguments while the user is asked: only so many may wait.
                let _place = match self
                    .confirmation
                    .wait(principal, weight(request.arguments()))
                {
                    Ok(place) => place,
                    Err(crowded) => {
                        tracing::debug!(tool, ?crowded, "a call may not wait for its user");
                        return Approval::Declined(crowded.into_error(tool));
                    }
                };
                match self.ask(peer, tool, question(&request)).await {
                    Ok(answer) => answer,
                    Err(error) => return Approval::Declined(error),
                }
            }
            Round::Modern {
                input_responses,
                request_state,
            } => {
                let binding = binding(tool, request.arguments(), principal);
                let Some(state) = request_state else {
                    return match self.confirmation.seal(&binding) {
                        Ok(state) => Approval::Ask(Question::new(question(&request), state)),
                        Err(error) => {
                            tracing::error!(%error, "cannot seal a confirmation state");
                            Approval::Declined(AgentError::internal("cannot ask for confirmation"))
                        }
                    };
                };
                if let Err(reason) = self.confirmation.redeem(state, &binding, principal) {
                    return Approval::Declined(AgentError::confirmation_invalid(tool, reason));
                }
                let answer = input_responses
                    .as_ref()
                    .and_then(|responses| responses.get(CONFIRM_INPUT_KEY))
                    .and_then(|answer| ElicitResult::deserialize(answer).ok());
                match answer {
                    Some(answer) => answer,
                    None => {
                        return Approval::Declined(AgentError::confirmation_invalid(
                            tool,
                            "the retry carries no answer to the confirmation",
                        ));
                    }
                }
            }
        };
        if approves(&answer) {
            tracing::debug!(tool, "the user approved the call");
            Approval::Granted
        } else {
            tracing::debug!(tool, action = ?answer.action, "the user did not approve the call");
            Approval::Declined(AgentError::confirmation_declined(tool))
        }
    }
}

impl ClientApproval {
    /// `elicitation/create`, awaited as long as the runtime waits. When it stops waiting (its
    /// approval deadline, or the call cancelled), this future is dropped and the question is
    /// withdrawn (`notifications/cancelled`), so a late answer approves nothing and the client
    /// can close its form.
    async fn ask(
        &self,
        peer: &Peer<RoleServer>,
        tool: &str,
        message: String,
    ) -> Result<ElicitResult, AgentError> {
        let ask = ServerRequest::ElicitRequest(confirmation_request(tool, message));
        let sent = peer
            .send_request_with_option(ask, PeerRequestOptions::no_options())
            .await;
        let outcome = match sent {
            Ok(handle) => {
                let withdraw = Withdraw(Some((peer.clone(), handle.id.clone())));
                let outcome = handle.await_response().await;
                // Answered, or failed: nothing left to withdraw.
                withdraw.disarm();
                outcome
            }
            Err(error) => Err(error),
        };
        match outcome {
            Ok(ClientResult::ElicitResult(answer)) => Ok(answer),
            other => {
                if let Err(error) = other {
                    tracing::debug!(%error, tool, "the client could not ask for confirmation");
                }
                // The client could not ask: as if it could not elicit at all.
                Err(AgentError::confirmation_required(tool))
            }
        }
    }
}

/// Withdraws a question still open when the call stops waiting for it (the runtime's approval
/// deadline passed, or the call was cancelled): rmcp forgets the pending request, and the
/// client is told.
struct Withdraw(Option<(Peer<RoleServer>, RequestId)>);

impl Withdraw {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        // Dropped inside the call's task when the runtime stops waiting; without a runtime (the
        // process is ending) there is nobody left to tell.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let withdrawn = CancelledNotificationParam::new(
                    Some(id),
                    Some("the call no longer waits for this answer".to_owned()),
                );
                let notification = ServerNotification::CancelledNotification(
                    CancelledNotification::new(withdrawn),
                );
                let _ = peer.send_notification(notification).await;
            });
        }
    }
}

/// What a sealed state is bound to: the tool, the digest of its canonical arguments and the
/// principal, each length-prefixed so no two bindings share bytes.
fn binding(tool: &str, arguments: &Value, principal: Option<&str>) -> Vec<u8> {
    let digest = Fingerprint::of(tool, arguments);
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(b"carmy/confirm/v1");
    for part in [
        tool.as_bytes(),
        digest.as_bytes(),
        principal.map_or(&b"\xff"[..], str::as_bytes),
    ] {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(part);
    }
    out
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

// --- The question ------------------------------------------------------------------------------

/// The question put to the human: the tool, its effect, its declared arguments in short, and
/// what was left out.
fn question(request: &ApprovalRequest<'_>) -> String {
    let tool = request.tool();
    let summary = Summary::new(request.arguments(), tool.input_schema());
    let mut message = format!(
        "Allow `{}` ({}) with {}?",
        tool.name(),
        tool.effect().as_str(),
        summary.text
    );
    if let Some(note) = summary.note() {
        message.push(' ');
        message.push_str(&note);
    }
    message
}

/// Any value: the schema of what a schema does not describe.
static ANY: Value = Value::Bool(true);

/// The arguments as the human reads them: `{order_id: "ord-1001", reason: "…"}`.
///
/// Only the fields the input schema declares are shown, those it requires first (in the order
/// of its `required`, which is the declaration order), then the others (in the order of its
/// `properties`, alphabetical with serde_json's default map); nested objects likewise. Each
/// value and the whole are cut short, and the note counts what was left out, so no key the
/// tool does not declare can push its target out of the question. A schema that declares no
/// `properties` (a map) declares every key.
#[derive(Debug, Default)]
struct Summary {
    text: String,
    /// Keys the schema does not declare, at the top and in the objects shown.
    undeclared: usize,
    /// Declared fields with a value that did not fit.
    cut: usize,
}

impl Summary {
    fn new(arguments: &Value, schema: &Value) -> Self {
        let mut summary = Self::default();
        let Value::Object(object) = arguments else {
            summary.text = render(arguments, schema, SUMMARY_CHARS, &mut summary.undeclared);
            return summary;
        };
        let (fields, undeclared) = members(object, schema);
        summary.undeclared = undeclared;
        if fields.is_empty() {
            summary.text = "no arguments".to_owned();
            return summary;
        }
        let mut text = String::from("{");
        let mut chars = 1;
        for (index, &(name, value, field_schema)) in fields.iter().enumerate() {
            let mut undeclared = 0;
            let mut piece = render_key(name);
            piece.push_str(": ");
            piece.push_str(&render(value, field_schema, VALUE_CHARS, &mut undeclared));
            let piece_chars = piece.chars().count();
            // The first field always shows: it is the target when the schema requires one.
            if index > 0 && chars + 2 + piece_chars + 1 > SUMMARY_CHARS {
                summary.cut = fields.len() - index;
                break;
            }
            if index > 0 {
                text.push_str(", ");
                chars += 2;
            }
            text.push_str(&piece);
            chars += piece_chars;
            summary.undeclared += undeclared;
        }
        text.push('}');
        summary.text = text;
        summary
    }

    /// What was left out, said plainly; `None` when nothing was.
    fn note(&self) -> Option<String> {
        let cut = match self.cut {
            0 => None,
            1 => Some("1 more field (too long to show)".to_owned()),
            n => Some(format!("{n} more fields (too long to show)")),
        };
        let undeclared = match self.undeclared {
            0 => None,
            1 => Some("1 key the tool does not declare".to_owned()),
            n => Some(format!("{n} keys the tool does not declare")),
        };
        match (cut, undeclared) {
            (None, None) => None,
            (Some(only), None) | (None, Some(only)) => Some(format!("Not shown: {only}.")),
            (Some(cut), Some(undeclared)) => Some(format!("Not shown: {cut}, and {undeclared}.")),
        }
    }
}

/// The members of `object` to show, in order, each with its schema: those `schema` requires,
/// then the other properties it declares; and how many keys it does not declare.
fn members<'a>(
    object: &'a Map<String, Value>,
    schema: &'a Value,
) -> (Vec<(&'a str, &'a Value, &'a Value)>, usize) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        // A map (or a schema without named fields): every key is data.
        let values = schema
            .get("additionalProperties")
            .filter(|values| values.is_object())
            .unwrap_or(&ANY);
        let all = object
            .iter()
            .map(|(name, value)| (name.as_str(), value, values))
            .collect();
        return (all, 0);
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut shown: Vec<(&str, &Value, &Value)> = Vec::new();
    for name in &required {
        if let Some((name, value)) = object.get_key_value(*name)
            && !shown.iter().any(|(seen, ..)| seen == name)
        {
            shown.push((name, value, properties.get(name).unwrap_or(&ANY)));
        }
    }
    for (name, field_schema) in properties {
        if let Some(value) = object.get(name)
            && !required.contains(&name.as_str())
        {
            shown.push((name, value, field_schema));
        }
    }
    let undeclared = object
        .keys()
        .filter(|name| !properties.contains_key(*name) && !required.contains(&name.as_str()))
        .count();
    (shown, undeclared)
}

/// A top-level key: as written when it is a plain name (`order_id`), else as a JSON string, so
/// that no key brings a line break or quotes of its own into the question.
fn render_key(name: &str) -> String {
    let mut out = Excerpt::new(KEY_CHARS);
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        out.push(name);
    } else {
        out.push_json(name);
    }
    out.text
}

/// `value` as JSON in at most `max` characters: an object shows the members its schema
/// declares (and counts the others in `undeclared`), every string is escaped, and what does
/// not fit ends in `…`. Stops as soon as it is full, however large `value` is.
fn render(value: &Value, schema: &Value, max: usize, undeclared: &mut usize) -> String {
    let mut out = Excerpt::new(max);
    write_value(&mut out, value, schema, undeclared);
    out.text
}

fn write_value(out: &mut Excerpt, value: &Value, schema: &Value, undeclared: &mut usize) {
    match value {
        Value::Object(object) => {
            let (members, hidden) = members(object, schema);
            *undeclared += hidden;
            out.push("{");
            for (index, (name, member, member_schema)) in members.into_iter().enumerate() {
                if out.is_full() {
                    return;
                }
                if index > 0 {
                    out.push(",");
                }
                out.push_json(&name);
                out.push(":");
                write_value(out, member, member_schema, undeclared);
            }
            out.push("}");
        }
        Value::Array(items) => {
            let item_schema = schema
                .get("items")
                .filter(|items| items.is_object())
                .unwrap_or(&ANY);
            out.push("[");
            for (index, item) in items.iter().enumerate() {
                if out.is_full() {
                    return;
                }
                if index > 0 {
                    out.push(",");
                }
                write_value(out, item, item_schema, undeclared);
            }
            out.push("]");
        }
        leaf => out.push_json(leaf),
    }
}

/// Text of at most `max` characters; past it, the last one is `…` and nothing more is taken.
struct Excerpt {
    text: String,
    chars: usize,
    max: usize,
    full: bool,
}

impl Excerpt {
    fn new(max: usize) -> Self {
        Self {
            text: String::new(),
            chars: 0,
            max,
            full: false,
        }
    }

    fn is_full(&self) -> bool {
        self.full
    }

    fn push(&mut self, text: &str) {
        for c in text.chars() {
            if self.full {
                return;
            }
            if self.chars == self.max {
                self.text.pop();
                self.text.push('…');
                self.full = true;
                return;
            }
            self.text.push(c);
            self.chars += 1;
        }
    }

    /// `value` serialized, until full: serialization stops at the first write past the end.
    fn push_json<T: Serialize + ?Sized>(&mut self, value: &T) {
        let _ = serde_json::to_writer(ExcerptWriter(self), value);
    }
}

/// serde_json's writer into an [`Excerpt`]; it fails once the excerpt is full, which stops the
/// serialization.
struct ExcerptWriter<'a>(&'a mut Excerpt);

impl io::Write for ExcerptWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.0.full {
            return Err(io::Error::other("the excerpt is full"));
        }
        // serde_json writes whole characters; lossy is only a guard.
        self.0.push(&String::from_utf8_lossy(bytes));
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(arguments: &Value, schema: &Value) -> String {
        let summary = Summary::new(arguments, schema);
        match summary.note() {
            Some(note) => format!("{} {note}", summary.text),
            None => summary.text,
        }
    }

    fn cancel_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "order_id": { "type": "string" },
                "reason": { "type": "string" }
            },
            "required": ["order_id"]
        })
    }

    #[test]
    fn summaries_are_short_and_readable() {
        let schema = cancel_schema();
        assert_eq!(
            summary(
                &json!({ "order_id": "ord-1001", "reason": "changed my mind" }),
                &schema
            ),
            r#"{order_id: "ord-1001", reason: "changed my mind"}"#
        );
        assert_eq!(summary(&json!({}), &schema), "no arguments");
        let long = summary(&json!({ "order_id": "x".repeat(1000) }), &schema);
        assert_eq!(
            long.chars().count(),
            "{order_id: }".len() + VALUE_CHARS,
            "{long}"
        );
        assert!(long.ends_with("…}"), "{long}");
        // A map declares every key; they are cut short all the same.
        let many: Map<String, Value> = (0..100).map(|i| (format!("field_{i}"), json!(i))).collect();
        let many = summary(&Value::Object(many), &json!({ "type": "object" }));
        assert!(many.chars().count() <= SUMMARY_CHARS + 60, "{many}");
        assert!(many.contains("} Not shown: "), "{many}");
        assert!(many.ends_with(" more fields (too long to show)."), "{many}");
    }

    #[test]
    fn the_target_shows_whatever_keys_are_added() {
        let mut arguments = json!({ "reason": "r".repeat(1000), "order_id": "ord-1001" });
        for n in 0..40 {
            arguments[format!("a{n:02}")] = json!("x".repeat(100));
        }
        let shown = summary(&arguments, &cancel_schema());
        assert!(
            shown.starts_with(r#"{order_id: "ord-1001", reason: "rrr"#),
            "{shown}"
        );
        assert!(
            shown.ends_with("…} Not shown: 40 keys the tool does not declare."),
            "{shown}"
        );
        assert!(!shown.contains("a00"), "{shown}");
        // One undeclared key, said as one.
        let one = summary(&json!({ "order_id": "o", "x": 1 }), &cancel_schema());
        assert_eq!(
            one,
            r#"{order_id: "o"} Not shown: 1 key the tool does not declare."#
        );
    }

    #[test]
    fn required_fields_come_first_in_declared_order_then_the_others() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a_note": { "type": "string" },
                "to": { "type": "string" },
                "amount": { "type": "integer" }
            },
            "required": ["to", "amount"]
        });
        assert_eq!(
            summary(
                &json!({ "a_note": "n", "amount": 5, "to": "acct-1" }),
                &schema
            ),
            r#"{to: "acct-1", amount: 5, a_note: "n"}"#
        );
    }

    #[test]
    fn nested_objects_show_their_declared_members_first() {
        let schema = json!({
            "type": "object",
            "properties": {
                "to": {
                    "type": "object",
                    "properties": { "account": { "type": "string" }, "memo": { "type": "string" } },
                    "required": ["account"]
                },
                "lines": {
                    "type": "array",
                    "items": { "type": "object", "properties": { "sku": { "type": "string" } } }
                }
            },
            "required": ["to"]
        });
        let arguments = json!({
            "to": { "aaaa": "x".repeat(200), "account": "acct-9", "memo": "m" },
            "lines": [{ "sku": "s1", "zz": 1 }]
        });
        assert_eq!(
            summary(&arguments, &schema),
            r#"{to: {"account":"acct-9","memo":"m"}, lines: [{"sku":"s1"}]} Not shown: 2 keys the tool does not declare."#
        );
    }

    #[test]
    fn rendering_stops_at_its_bound_however_large_the_value() {
        let huge = json!({ "order_id": "o", "reason": "é".repeat(4_000_000) });
        let shown = summary(&huge, &cancel_schema());
        assert!(shown.chars().count() < 120, "{shown}");
        // A huge key of a map is cut too, and strings stay escaped.
        let key = format!("{}\n", "k".repeat(1_000_000));
        let map = json!({ key: "line\nbreak" });
        let shown = summary(&map, &json!({ "type": "object" }));
        assert!(shown.chars().count() < 60, "{shown}");
        assert!(!shown.contains('\n'), "{shown}");
        assert!(summary(&json!({ "t": "a\nb" }), &json!({})).contains(r#""a\nb""#));
    }

    #[test]
    fn weight_counts_what_parsing_makes_of_a_value() {
        let numbers = json!(vec![0; 1000]);
        assert!(weight(&numbers) >= 32 * 1000, "{}", weight(&numbers));
        let text = json!("x".repeat(1 << 20));
        assert!(weight(&text) >= 1 << 20);
        assert!(weight(&text) < (1 << 20) + 100);
    }

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
    fn the_records_are_bounded_in_all_and_expire() {
        let mut redeemed = Redeemed::default();
        let ttl = 1_000;
        // Many principals, each under its own bound: the total holds, the fullest pays.
        let principals = MAX_REDEEMED / MAX_REDEEMED_PER_PRINCIPAL + 8;
        let mut n = 0;
        for round in 0..MAX_REDEEMED_PER_PRINCIPAL as u64 {
            for p in 0..principals {
                n += 1;
                let principal = format!("p{p}");
                assert_eq!(
                    redeemed.redeem(Some(&principal), (round, n), round, ttl),
                    Ok(())
                );
            }
        }
        assert!(redeemed.held <= MAX_REDEEMED, "{}", redeemed.held);
        let counted: usize = redeemed.principals.values().map(|w| w.used.len()).sum();
        assert_eq!(counted, redeemed.held);
        // Once expired, the records are let go with their principals.
        redeemed.sweep(10 * ttl, ttl);
        assert_eq!(redeemed.held, 0);
        assert!(redeemed.principals.is_empty());
    }

    #[test]
    fn new_principals_past_the_bound_are_refused_while_records_live() {
        let mut redeemed = Redeemed::default();
        let ttl = 1_000;
        for p in 0..MAX_REDEEMING_PRINCIPALS as u64 {
            let principal = format!("p{p}");
            assert_eq!(redeemed.redeem(Some(&principal), (0, p), 0, ttl), Ok(()));
        }
        assert_eq!(redeemed.redeem(Some("late"), (1, 0), 1, ttl), Err(CROWDED));
        // Known principals and the anonymous one are not affected.
        assert_eq!(redeemed.redeem(Some("p1"), (1, 1), 1, ttl), Ok(()));
        assert_eq!(redeemed.redeem(None, (1, 2), 1, ttl), Ok(()));
        // Once the old records expire, there is room.
        assert_eq!(
            redeemed.redeem(Some("late"), (2_000, 0), 2_000, ttl),
            Ok(())
        );
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
