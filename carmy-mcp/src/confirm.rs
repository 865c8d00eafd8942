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
//!   bound to the tool, the arguments' digest and the principal, expires, and is single-use
//!   (its nonce is remembered until it expires).
//!
//! Approved, the call runs once; nothing a client sends can add a grant to the host's context.

use std::{
    collections::HashMap,
    fmt::Write as _,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use carmy_core::{AgentError, Approval, ApprovalRequest, Approver, Fingerprint, Question};
use rmcp::{
    Peer, RoleServer,
    model::{
        ClientCapabilities, ClientResult, ElicitResult, InputResponses, ProtocolVersion,
        RequestStateCodec, RequestStateError, SealOptions, ServerRequest,
    },
    service::RequestContext,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::mapping::{CONFIRM_INPUT_KEY, approves, confirmation_request};

/// How long a sealed confirmation state stays valid.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(5 * 60);
/// Nonces remembered at once; past it, new confirmations are refused until old ones expire.
const MAX_PENDING: usize = 10_000;
/// Longest argument summary shown to the human.
const SUMMARY_CHARS: usize = 300;
/// Longest single argument value in the summary.
const VALUE_CHARS: usize = 80;

/// Per-server state of client confirmation: the sealing key and the nonces already redeemed.
/// Shared by every clone of the server (every connection), so a state is single-use across them.
pub(crate) struct ClientConfirmation {
    codec: RequestStateCodec,
    ttl: Duration,
    redeemed: Mutex<HashMap<String, Instant>>,
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
    /// Format version.
    v: u8,
    /// Random, single-use.
    nonce: String,
}

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
            redeemed: Mutex::new(HashMap::new()),
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

    /// A fresh single-use state, sealed to the call `binding` describes, valid for the TTL.
    fn seal(&self, binding: &[u8]) -> Result<String, RequestStateError> {
        let sealed = Sealed {
            v: 1,
            nonce: nonce(),
        };
        let options = SealOptions::new().associated_data(binding).ttl(self.ttl);
        self.codec.seal_json_with(&sealed, &options)
    }

    /// Opens `state` for this call and marks its nonce used. The reasons are the only detail a
    /// client gets; they never say which part of the binding differed.
    fn redeem(&self, state: &str, binding: &[u8]) -> Result<(), &'static str> {
        let sealed: Sealed =
            self.codec
                .open_json_with(state, binding)
                .map_err(|error| match error {
                    rmcp::model::RequestStateError::Expired => "it expired; call again",
                    error => {
                        tracing::debug!(%error, "a confirmation state failed verification");
                        "it was altered or made for another call"
                    }
                })?;
        if sealed.v != 1 {
            return Err("it was altered or made for another call");
        }
        let now = Instant::now();
        let mut redeemed = self
            .redeemed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if redeemed.len() >= MAX_PENDING {
            redeemed.retain(|_, expires| *expires > now);
            if redeemed.len() >= MAX_PENDING {
                return Err("too many confirmations are pending; call again shortly");
            }
        }
        // Remembered for a full TTL from now, which outlasts the state's own expiry.
        match redeemed.entry(sealed.nonce) {
            std::collections::hash_map::Entry::Occupied(mut used) if *used.get() > now => {
                used.insert(now + self.ttl);
                Err("it was already used; call again")
            }
            std::collections::hash_map::Entry::Occupied(mut used) => {
                used.insert(now + self.ttl);
                Ok(())
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(now + self.ttl);
                Ok(())
            }
        }
    }
}

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
        let message = question(&request);
        let answer = match &self.round {
            Round::Legacy { peer } => {
                let ask = ServerRequest::ElicitRequest(confirmation_request(tool, &message));
                match peer.send_request(ask).await {
                    Ok(ClientResult::ElicitResult(answer)) => answer,
                    other => {
                        if let Err(error) = other {
                            tracing::debug!(%error, tool, "the client could not ask for confirmation");
                        }
                        // The client could not ask: as if it could not elicit at all.
                        return Approval::Declined(AgentError::confirmation_required(tool));
                    }
                }
            }
            Round::Modern {
                input_responses,
                request_state,
            } => {
                let binding = binding(tool, request.arguments(), request.context().principal());
                let Some(state) = request_state else {
                    return match self.confirmation.seal(&binding) {
                        Ok(state) => Approval::Ask(Question::new(message, state)),
                        Err(error) => {
                            tracing::error!(%error, "cannot seal a confirmation state");
                            Approval::Declined(AgentError::internal("cannot ask for confirmation"))
                        }
                    };
                };
                if let Err(reason) = self.confirmation.redeem(state, &binding) {
                    return Approval::Declined(AgentError::confirmation_invalid(tool, reason));
                }
                let answer = input_responses
                    .as_ref()
                    .and_then(|responses| responses.get(CONFIRM_INPUT_KEY))
                    .and_then(|answer| serde_json::from_value::<ElicitResult>(answer.clone()).ok());
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

/// The question put to the human: the tool, its effect, and the arguments in short.
fn question(request: &ApprovalRequest<'_>) -> String {
    let tool = request.tool();
    format!(
        "Allow `{}` ({}) with {}?",
        tool.name(),
        tool.effect().as_str(),
        summarize(request.arguments())
    )
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

fn nonce() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random number generator");
    bytes
        .iter()
        .fold(String::with_capacity(32), |mut out, byte| {
            let _ = write!(out, "{byte:02x}");
            out
        })
}

/// Form elicitation, stated either way a client may declare it (an empty `elicitation: {}` means
/// form, for clients of 2025-06-18).
fn supports_form(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|capabilities| capabilities.elicitation.as_ref())
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// `{order_id: "ord-1001", reason: "…"}`, each value and the whole cut short.
pub(crate) fn summarize(arguments: &Value) -> String {
    let Value::Object(fields) = arguments else {
        return truncate(&arguments.to_string(), SUMMARY_CHARS);
    };
    if fields.is_empty() {
        return "no arguments".to_owned();
    }
    let mut out = String::from("{");
    for (index, (name, value)) in fields.iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{name}: {}", truncate(&value.to_string(), VALUE_CHARS));
    }
    out.push('}');
    if out.chars().count() > SUMMARY_CHARS {
        return format!(
            "{}…}}",
            out.chars().take(SUMMARY_CHARS - 2).collect::<String>()
        );
    }
    out
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_are_short_and_readable() {
        assert_eq!(
            summarize(&json!({ "order_id": "ord-1001", "reason": "changed my mind" })),
            r#"{order_id: "ord-1001", reason: "changed my mind"}"#
        );
        assert_eq!(summarize(&json!({})), "no arguments");
        let long = summarize(&json!({ "text": "x".repeat(1000) }));
        assert!(long.chars().count() < 100, "{long}");
        let many: serde_json::Map<String, Value> =
            (0..100).map(|i| (format!("field_{i}"), json!(i))).collect();
        let many = summarize(&Value::Object(many));
        assert!(many.chars().count() <= SUMMARY_CHARS + 1, "{many}");
        assert!(many.ends_with("…}"));
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
        assert!(confirm.redeem(&state, &other).is_err(), "re-targeted");
        let mut tampered = state.clone();
        tampered.pop();
        tampered.push(if state.ends_with('A') { 'B' } else { 'A' });
        assert!(confirm.redeem(&tampered, &call).is_err(), "tampered");
        assert_eq!(confirm.redeem(&state, &call), Ok(()));
        assert!(confirm.redeem(&state, &call).is_err(), "replayed");
        // Another server (another key) trusts none of it.
        assert!(ClientConfirmation::new().redeem(&state, &call).is_err());
    }

    #[test]
    fn an_expired_state_is_refused() {
        let confirm = ClientConfirmation::with_ttl(Duration::from_millis(1));
        let call = binding("cancel_order", &json!({}), None);
        let state = confirm.seal(&call).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(confirm.redeem(&state, &call), Err("it expired; call again"));
    }
}
