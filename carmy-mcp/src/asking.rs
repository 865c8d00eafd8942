//! A tool's questions to the client ([`carmy_core::Asker`]): `elicitation/create` for a form,
//! `sampling/createMessage` for the model, `roots/list` for the roots.
//!
//! - 2025-11-25 (and older) sessions: the requests go to the client while the call waits
//!   ([`Round::Legacy`]).
//! - 2026-07-28: a server may not send requests, so the call ends with an `input_required`
//!   result carrying the questions ([`Round::Modern`]); the client retries the call with the
//!   answers in `inputResponses` and echoes `requestState`. The tool runs again and finds each
//!   answer under the key it asked with: this round's in `inputResponses`, earlier rounds' in
//!   the state. The state is untrusted, so it is sealed (HMAC-SHA256 with a per-server random
//!   key, rmcp's `RequestStateCodec`), bound to the tool, the arguments and the principal, and
//!   expires; a state that fails verification is refused (`-32602`) before anything runs.
//!   Answers the tool never asked for are ignored; an answer of the wrong shape is asked again.
//!
//! A question the client declared no capability for is not asked: the tool can tell
//! beforehand ([`Context::can_ask`](carmy_core::Context::can_ask)), and asking anyway fails
//! with `CANNOT_ASK`.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use carmy_core::{
    AgentError, Answers, Ask, AskKind, Asked, Asker, Asks, ContentBlock, Pending, Role,
};
use rmcp::{
    Peer, RoleServer,
    model::{
        ClientCapabilities, ErrorData, InputRequest, InputRequests, InputResponses,
        ProtocolVersion, RequestStateCodec, RequestStateError, SealOptions, ServerRequest,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

/// The prefix of an asking state: it tells one from a confirmation's, which travels the same way.
const STATE_PREFIX: &str = "ask.";
/// How long a question's state stays valid: the user's time to answer.
const STATE_TTL: Duration = Duration::from_secs(10 * 60);

/// Per-server sealing of asking states; shared by every clone of the server.
pub(crate) struct AskStates {
    codec: RequestStateCodec,
}

impl std::fmt::Debug for AskStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AskStates")
    }
}

impl AskStates {
    pub(crate) fn new() -> Self {
        Self {
            codec: crate::sealing::fresh_codec(),
        }
    }

    /// Whether `state` is an asking state (rather than a confirmation's).
    pub(crate) fn owns(state: &str) -> bool {
        state.starts_with(STATE_PREFIX)
    }

    /// The asker of one `tools/call` on a 2026-07-28 request: the answers so far, from a state
    /// that passed verification, and this round's. A state that fails is the call's error.
    pub(crate) fn modern(
        self: &Arc<Self>,
        capabilities: Option<ClientCapabilities>,
        call: CallBinding<'_>,
        input_responses: Option<InputResponses>,
        request_state: Option<&str>,
    ) -> Result<ClientAsker, ErrorData> {
        let binding = call.bytes();
        let mut known: BTreeMap<String, Value> = match request_state {
            Some(state) => self.open(state, &binding)?,
            None => BTreeMap::new(),
        };
        known.extend(input_responses.unwrap_or_default());
        Ok(ClientAsker {
            round: Round::Modern {
                capabilities: capabilities.unwrap_or_default(),
                states: Arc::clone(self),
                binding,
                known,
                used: Mutex::default(),
            },
        })
    }

    fn open(&self, state: &str, binding: &[u8]) -> Result<BTreeMap<String, Value>, ErrorData> {
        let refused = |reason: &str| {
            ErrorData::invalid_params(
                format!("`requestState` is not valid: {reason}"),
                Some(json!({ "field": "requestState" })),
            )
        };
        let sealed = state
            .strip_prefix(STATE_PREFIX)
            .ok_or_else(|| refused("it was not issued by this server"))?;
        self.codec
            .open_json_with(sealed, binding)
            .map_err(|error| match error {
                RequestStateError::Expired => refused("it expired; call again"),
                error => {
                    tracing::debug!(%error, "an asking state failed verification");
                    refused("it was altered or made for another call")
                }
            })
    }

    fn seal(
        &self,
        answers: &BTreeMap<String, Value>,
        binding: &[u8],
    ) -> Result<String, RequestStateError> {
        let options = SealOptions::new().associated_data(binding).ttl(STATE_TTL);
        let sealed = self.codec.seal_json_with(answers, &options)?;
        Ok(format!("{STATE_PREFIX}{sealed}"))
    }
}

/// What a state is bound to: the call it was issued for.
pub(crate) struct CallBinding<'a> {
    pub(crate) tool: &'a str,
    pub(crate) arguments: &'a Value,
    pub(crate) principal: Option<&'a str>,
}

impl CallBinding<'_> {
    fn bytes(&self) -> Vec<u8> {
        crate::sealing::call_binding(b"carmy/ask/v1", self.tool, self.arguments, self.principal)
    }
}

/// The asker of one call.
pub(crate) struct ClientAsker {
    round: Round,
}

enum Round {
    /// Requests to the client, awaited in the call.
    Legacy { peer: Peer<RoleServer> },
    /// Answers from the client's retry; questions still open end the call.
    Modern {
        /// What the request's `_meta` says the client can answer.
        capabilities: ClientCapabilities,
        states: Arc<AskStates>,
        binding: Vec<u8>,
        /// Every answer the client sent (state and this round), by key.
        known: BTreeMap<String, Value>,
        /// The answers the tool took so far: what the next state carries.
        used: Mutex<BTreeMap<String, Value>>,
    },
}

impl ClientAsker {
    /// The asker of one request (a call, a render): the client's answers and the state of
    /// earlier rounds on 2026-07-28, requests to the client before.
    pub(crate) fn for_request(
        states: &Arc<AskStates>,
        request: &RequestContext<RoleServer>,
        call: CallBinding<'_>,
        input_responses: Option<InputResponses>,
        request_state: Option<&str>,
    ) -> Result<Self, ErrorData> {
        let stateless = request
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        if stateless {
            states.modern(
                request.client_capabilities(),
                call,
                input_responses,
                request_state,
            )
        } else {
            Ok(Self::legacy(request.peer.clone()))
        }
    }

    /// The asker of a call on a 2025-11-25 (or older) session: what the client can answer is
    /// read from its `initialize` when a tool asks, never copied for a call that does not.
    pub(crate) fn legacy(peer: Peer<RoleServer>) -> Self {
        Self {
            round: Round::Legacy { peer },
        }
    }
}

impl Asker for ClientAsker {
    fn can_ask(&self, kind: AskKind) -> bool {
        let initialized;
        let capabilities = match &self.round {
            Round::Modern { capabilities, .. } => capabilities,
            Round::Legacy { peer } => match peer.peer_info() {
                Some(info) => {
                    initialized = info;
                    &initialized.capabilities
                }
                None => return false,
            },
        };
        match kind {
            AskKind::Input => capabilities
                .elicitation
                .as_ref()
                .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none()),
            AskKind::Sample => capabilities.sampling.is_some(),
            AskKind::Roots => capabilities.roots.is_some(),
            _ => false,
        }
    }

    async fn ask(&self, asks: &Asks) -> Asked {
        match &self.round {
            Round::Legacy { peer } => ask_in_call(peer, asks).await,
            Round::Modern {
                states,
                binding,
                known,
                used,
                ..
            } => {
                let mut used = used.lock().unwrap_or_else(|e| e.into_inner());
                let mut open = Asks::new();
                for (key, ask) in asks.iter() {
                    match known.get(key).filter(|answer| answers(ask, answer)) {
                        Some(answer) => {
                            used.insert(key.to_owned(), answer.clone());
                        }
                        None => open = open.with(key, ask.clone()),
                    }
                }
                if open.is_empty() {
                    let asked = asks.iter().map(|(key, _)| key);
                    return Asked::Answered(Answers::new(
                        asked
                            .filter_map(|key| Some((key.to_owned(), used.get(key)?.clone())))
                            .collect(),
                    ));
                }
                match states.seal(&used, binding) {
                    Ok(state) => Asked::Later(Pending::new(open, Some(state))),
                    Err(error) => Asked::Refused(AgentError::internal(format!(
                        "the questions' state could not be sealed: {error}"
                    ))),
                }
            }
        }
    }
}

/// Whether `answer` is of the shape `ask` expects, so that a wrong one is asked again (or, for
/// a task, refused).
pub(crate) fn answers(ask: &Ask, answer: &Value) -> bool {
    match ask {
        Ask::Input { .. } => answer.get("action").is_some_and(Value::is_string),
        Ask::Sample { .. } => answer.get("content").is_some(),
        Ask::Roots => answer.get("roots").is_some_and(Value::is_array),
        _ => false,
    }
}

/// Sends each question to the client and awaits its answer.
async fn ask_in_call(peer: &Peer<RoleServer>, asks: &Asks) -> Asked {
    let mut answers = BTreeMap::new();
    for (key, ask) in asks.iter() {
        let request = match serde_json::from_value::<ServerRequest>(request(ask)) {
            Ok(request) => request,
            Err(error) => return Asked::Refused(malformed(ask, &error)),
        };
        match peer.send_request(request).await {
            Ok(answer) => {
                answers.insert(
                    key.to_owned(),
                    serde_json::to_value(answer).unwrap_or(Value::Null),
                );
            }
            Err(error) => {
                return Asked::Refused(AgentError::unavailable(
                    carmy_core::codes::ASK_FAILED,
                    format!("the client did not answer `{key}`: {error}"),
                ));
            }
        }
    }
    Asked::Answered(Answers::new(answers))
}

/// The questions still open, as the `inputRequests` of an `input_required` result.
pub(crate) fn input_requests(pending: &Pending) -> Result<InputRequests, AgentError> {
    pending
        .asks()
        .iter()
        .map(|(key, ask)| {
            serde_json::from_value::<InputRequest>(request(ask))
                .map(|request| (key.to_owned(), request))
                .map_err(|error| malformed(ask, &error))
        })
        .collect()
}

/// The tool's own mistake: a question no MCP client accepts (a form that is not flat).
fn malformed(ask: &Ask, error: &serde_json::Error) -> AgentError {
    AgentError::internal(format!(
        "the tool's question ({}) is not one MCP clients accept: {error}",
        ask.kind().as_str()
    ))
}

/// A question as an MCP request.
fn request(ask: &Ask) -> Value {
    match ask {
        Ask::Input { message, schema } => json!({
            "method": "elicitation/create",
            "params": { "mode": "form", "message": message, "requestedSchema": schema },
        }),
        Ask::Sample {
            messages,
            max_tokens,
            system_prompt,
        } => {
            let messages: Vec<Value> = messages
                .iter()
                .map(|message| {
                    let role = match message.role() {
                        Role::Assistant => "assistant",
                        _ => "user",
                    };
                    json!({ "role": role, "content": sampling_content(message.content()) })
                })
                .collect();
            let mut params = json!({ "messages": messages, "maxTokens": max_tokens });
            if let Some(system_prompt) = system_prompt {
                params["systemPrompt"] = json!(system_prompt);
            }
            json!({ "method": "sampling/createMessage", "params": params })
        }
        _ => json!({ "method": "roots/list", "params": {} }),
    }
}

/// Sampling messages hold text, images and audio.
fn sampling_content(content: &ContentBlock) -> Value {
    serde_json::to_value(crate::mapping::content_block(content)).unwrap_or(Value::Null)
}
