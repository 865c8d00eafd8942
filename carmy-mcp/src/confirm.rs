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
//!
//! The question is built from the tool's declared input fields (the required ones first), so
//! keys the tool does not declare can never push its target out of what the human reads; the
//! question says how many it left out ([`Summary`]).

use std::{
    collections::HashMap,
    fmt::Write as _,
    io,
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
use serde_json::{Map, Value};

use crate::mapping::{CONFIRM_INPUT_KEY, approves, confirmation_request};

/// How long a sealed confirmation state stays valid.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(5 * 60);
/// Nonces remembered at once; past it, new confirmations are refused until old ones expire.
const MAX_PENDING: usize = 10_000;
/// Longest argument summary shown to the human, in characters (its first field always shows).
const SUMMARY_CHARS: usize = 300;
/// Longest single value in the summary, in characters.
const VALUE_CHARS: usize = 80;
/// Longest key in the summary, in characters (keys are data only when the schema declares none).
const KEY_CHARS: usize = 40;

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
