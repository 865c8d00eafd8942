//! Tools that ask the client: the human through a form, the model, the roots. The same code
//! answers both protocol revisions: up to 2025-11-25 the questions go to the client while the
//! call waits; on 2026-07-28 the call ends `input_required` and runs again with the answers.

use carmy::{
    AgentError, Context, ToolContent,
    ask::{Ask, AskKind, Asks, InputAnswer},
    tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

fn answered(answer: &InputAnswer) -> String {
    let content = answer.content.as_ref().map_or_else(
        || "{}".to_owned(),
        |content| Value::from(content.clone()).to_string(),
    );
    format!("action={}, content={content}", answer.action.as_str())
}

/// The argument of `test_sampling`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SamplingInput {
    /// The prompt to send to the LLM.
    pub prompt: String,
}

/// Asks the client's model to answer the prompt.
#[tool(effect = "none")]
pub async fn test_sampling(
    input: SamplingInput,
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let sampled = context
        .sample("sample", Ask::sample(input.prompt, 100))
        .await?;
    let text = sampled.text().unwrap_or_default();
    Ok(ToolContent::new().text(format!("LLM response: {text}")))
}

/// The argument of `test_elicitation`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ElicitationInput {
    /// The message to show the user.
    pub message: String,
}

/// Asks the user for a username and an email address.
#[tool(effect = "none")]
pub async fn test_elicitation(
    input: ElicitationInput,
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let form = json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" }
        },
        "required": ["username", "email"]
    });
    let answer = context.ask_input("user", input.message, form).await?;
    Ok(ToolContent::new().text(format!("User response: {}", answered(&answer))))
}

/// Asks the user for a form whose every field has a default (SEP-1034).
#[tool(effect = "none")]
pub async fn test_elicitation_sep1034_defaults(
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let form = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "score": { "type": "number", "default": 95.5 },
            "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "default": true }
        }
    });
    let answer = context
        .ask_input("defaults", "Please review your details", form)
        .await?;
    Ok(ToolContent::new().text(format!("Elicitation completed: {}", answered(&answer))))
}

/// Asks the user for a form with every kind of enumeration (SEP-1330).
#[tool(effect = "none")]
pub async fn test_elicitation_sep1330_enums(context: &Context) -> Result<ToolContent, AgentError> {
    let form = json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
            "titledSingle": { "type": "string", "oneOf": [
                { "const": "value1", "title": "First Option" },
                { "const": "value2", "title": "Second Option" },
                { "const": "value3", "title": "Third Option" }
            ] },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
            "titledMulti": { "type": "array", "items": { "anyOf": [
                { "const": "value1", "title": "First Choice" },
                { "const": "value2", "title": "Second Choice" },
                { "const": "value3", "title": "Third Choice" }
            ] } }
        }
    });
    let answer = context.ask_input("enums", "Please choose", form).await?;
    Ok(ToolContent::new().text(format!("Elicitation completed: {}", answered(&answer))))
}

fn name_form() -> Value {
    json!({
        "type": "object",
        "properties": { "name": { "type": "string" } },
        "required": ["name"]
    })
}

/// Asks the user's name, then greets them.
#[tool(effect = "none")]
pub async fn test_input_required_result_elicitation(
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let answer = context
        .ask_input("user_name", "What is your name?", name_form())
        .await?;
    let name = answer
        .content
        .as_ref()
        .and_then(|content| content.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("stranger");
    Ok(ToolContent::new().text(format!("Hello, {name}!")))
}

/// Asks the client's model for the capital of France.
#[tool(effect = "none")]
pub async fn test_input_required_result_sampling(
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let sampled = context
        .sample(
            "capital_question",
            Ask::sample("What is the capital of France?", 100),
        )
        .await?;
    Ok(ToolContent::new().text(format!(
        "The model says: {}",
        sampled.text().unwrap_or_default()
    )))
}

/// Asks the client for its roots.
#[tool(effect = "none")]
pub async fn test_input_required_result_list_roots(
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let roots = context.roots("client_roots").await?;
    let uris: Vec<&str> = roots.iter().map(|root| root.uri.as_str()).collect();
    Ok(ToolContent::new().text(format!("Client roots: {}", uris.join(", "))))
}

fn confirm_form() -> Value {
    json!({
        "type": "object",
        "properties": { "ok": { "type": "boolean" } },
        "required": ["ok"]
    })
}

/// Asks for a confirmation; the answer comes back with the sealed state of the question.
#[tool(effect = "none")]
pub async fn test_input_required_result_request_state(
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let answer = context
        .ask_input("confirm", "Please confirm", confirm_form())
        .await?;
    // The answer was found beside a state that passed verification: say so.
    Ok(ToolContent::new().text(format!("state-ok: {}", answered(&answer))))
}

/// Asks a form, the model and the roots at once.
#[tool(effect = "none")]
pub async fn test_input_required_result_multiple_inputs(
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let answers = context
        .ask(
            Asks::new()
                .with("user_name", Ask::input("What is your name?", name_form()))
                .with("greeting", Ask::sample("Generate a greeting", 50))
                .with("client_roots", Ask::Roots),
        )
        .await?;
    let name = answered(&answers.input("user_name")?);
    let greeting = answers.sample("greeting")?;
    let roots = answers.roots("client_roots")?;
    Ok(ToolContent::new().text(format!(
        "name: {name}; greeting: {}; roots: {}",
        greeting.text().unwrap_or_default(),
        roots.len()
    )))
}

/// Asks two questions, one after the other.
#[tool(effect = "none")]
pub async fn test_input_required_result_multi_round(
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let name = context
        .ask_input("step1", "Step 1: What is your name?", name_form())
        .await?;
    let color_form = json!({
        "type": "object",
        "properties": { "color": { "type": "string" } },
        "required": ["color"]
    });
    let color = context
        .ask_input("step2", "Step 2: What is your favorite color?", color_form)
        .await?;
    Ok(ToolContent::new().text(format!(
        "step1: {}; step2: {}",
        answered(&name),
        answered(&color)
    )))
}

/// Asks a confirmation whose state is sealed: a state altered by the client is refused.
#[tool(effect = "none")]
pub async fn test_input_required_result_tampered_state(
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let answer = context
        .ask_input("confirm", "Please confirm", confirm_form())
        .await?;
    Ok(ToolContent::new().text(format!("Confirmed: {}", answered(&answer))))
}

/// Asks only what the client declared it can answer.
#[tool(effect = "none")]
pub async fn test_input_required_result_capabilities(
    context: &Context,
) -> Result<ToolContent, AgentError> {
    let mut asks = Asks::new();
    if context.can_ask(AskKind::Sample) {
        asks = asks.with("greeting", Ask::sample("Generate a greeting", 50));
    }
    if context.can_ask(AskKind::Input) {
        asks = asks.with("user_name", Ask::input("What is your name?", name_form()));
    }
    if asks.is_empty() {
        return Ok(ToolContent::new().text("The client can answer nothing: nothing asked."));
    }
    let answers = context.ask(asks).await?;
    Ok(ToolContent::new().text(format!("Answered {} question(s).", answers_len(&answers))))
}

fn answers_len(answers: &carmy::ask::Answers) -> usize {
    ["greeting", "user_name"]
        .iter()
        .filter(|key| answers.raw(key).is_some())
        .count()
}

/// Asks the client's model, whatever the client declared: a client that declared no
/// `sampling` gets `-32021` on 2026-07-28 (and a `CANNOT_ASK` tool error before).
#[tool(effect = "none")]
pub async fn test_missing_capability(context: &Context) -> Result<ToolContent, AgentError> {
    let sampled = context
        .sample("sample", Ask::sample("Say hello", 20))
        .await?;
    Ok(ToolContent::new().text(sampled.text().unwrap_or_default().to_owned()))
}

/// Asks the user a question: on 2026-07-28 the answer is an `input_required` result, never a
/// request of the server's on the response stream.
#[tool(effect = "none")]
pub async fn test_streaming_elicitation(context: &Context) -> Result<ToolContent, AgentError> {
    let answer = context
        .ask_input("user_name", "What is your name?", name_form())
        .await?;
    Ok(ToolContent::new().text(format!("Answered: {}", answered(&answer))))
}
