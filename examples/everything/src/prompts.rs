//! Prompts: text, arguments, an embedded resource and an image.

use carmy::{AgentError, Content, Context, Message, Messages, Role, prompt};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{RED_PIXEL_PNG, completion::test_words};

/// A prompt without arguments.
#[prompt]
pub async fn test_simple_prompt() -> Result<Messages, AgentError> {
    Ok(Message::user("This is a simple prompt for testing.").into())
}

/// The arguments of `test_prompt_with_arguments`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TwoArguments {
    /// First test argument.
    pub arg1: String,
    /// Second test argument.
    pub arg2: String,
}

/// A prompt with two arguments.
#[prompt(complete(arg1 = test_words, arg2 = test_words))]
pub async fn test_prompt_with_arguments(input: TwoArguments) -> Result<Messages, AgentError> {
    Ok(Message::user(format!(
        "Prompt with arguments: arg1='{}', arg2='{}'",
        input.arg1, input.arg2
    ))
    .into())
}

/// The argument of `test_prompt_with_embedded_resource`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUri {
    /// URI of the resource to embed.
    pub resource_uri: String,
}

/// A prompt that embeds a resource.
#[prompt]
pub async fn test_prompt_with_embedded_resource(
    input: ResourceUri,
) -> Result<Messages, AgentError> {
    Ok(Messages::new()
        .with(Message::resource(
            Role::User,
            Content::text("Embedded resource content for testing.")
                .uri(input.resource_uri)
                .mime_type("text/plain"),
        ))
        .with(Message::user("Please process the embedded resource above.")))
}

/// A prompt with an image.
#[prompt]
pub async fn test_prompt_with_image() -> Result<Messages, AgentError> {
    Ok(Messages::new()
        .with(Message::image(Role::User, RED_PIXEL_PNG, "image/png"))
        .with(Message::user("Please analyze the image above.")))
}

/// A prompt that asks the user for its context first (on 2026-07-28, an `input_required`
/// answer to `prompts/get`).
#[prompt]
pub async fn test_input_required_result_prompt(context: &Context) -> Result<Messages, AgentError> {
    let form = serde_json::json!({
        "type": "object",
        "properties": { "context": { "type": "string" } },
        "required": ["context"]
    });
    let answer = context
        .ask_input("user_context", "What context should the prompt use?", form)
        .await?;
    let given = answer
        .content
        .as_ref()
        .and_then(|content| content.get("context"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("none given");
    Ok(Message::user(format!("Answer with this context in mind: {given}")).into())
}
