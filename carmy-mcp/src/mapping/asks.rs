//! A tool's (or a prompt's) questions as MCP requests: `elicitation/create` for a form,
//! `sampling/createMessage` for the model, `roots/list` for the roots; and which answers have
//! the shape their question expects.

use carmy_core::{AgentError, Ask, ContentBlock, Pending, Role};
use rmcp::model::{InputRequest, InputRequests, InputRequiredResult, ServerRequest};
use serde_json::{Value, json};

/// A question as the request a 2025-11-25 server sends the client.
pub(crate) fn server_request(ask: &Ask) -> Result<ServerRequest, AgentError> {
    serde_json::from_value(request(ask)).map_err(|error| malformed(ask, &error))
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

/// An execution waiting on answers, as the `input_required` result of 2026-07-28: its questions
/// and the state to send back with the answers.
pub(crate) fn input_required(pending: &Pending) -> Result<InputRequiredResult, AgentError> {
    let requests = input_requests(pending)?;
    Ok(InputRequiredResult::new(
        Some(requests),
        pending.state().map(str::to_owned),
    ))
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
    serde_json::to_value(super::content_block(content)).unwrap_or(Value::Null)
}
