//! Tools: content of every kind, logging, progress and errors, from inside a tool.

use std::time::Duration;

use carmy::{AgentError, Content, Context, ToolContent, tool};

use crate::{RED_PIXEL_PNG, SILENCE_WAV};

/// Returns one text block.
#[tool(effect = "none")]
pub async fn test_simple_text() -> Result<ToolContent, AgentError> {
    Ok(ToolContent::new().text("This is a simple text response for testing."))
}

/// Returns a PNG image.
#[tool(effect = "none")]
pub async fn test_image_content() -> Result<ToolContent, AgentError> {
    Ok(ToolContent::new().image(RED_PIXEL_PNG, "image/png"))
}

/// Returns a WAV sound.
#[tool(effect = "none")]
pub async fn test_audio_content() -> Result<ToolContent, AgentError> {
    Ok(ToolContent::new().audio(SILENCE_WAV, "audio/wav"))
}

/// Returns a resource embedded whole.
#[tool(effect = "none")]
pub async fn test_embedded_resource() -> Result<ToolContent, AgentError> {
    Ok(ToolContent::new().resource(
        Content::text("This is an embedded resource content.")
            .uri("test://embedded-resource")
            .mime_type("text/plain"),
    ))
}

/// Returns text, an image and an embedded resource, in that order.
#[tool(effect = "none")]
pub async fn test_multiple_content_types() -> Result<ToolContent, AgentError> {
    Ok(ToolContent::new()
        .text("Multiple content types test:")
        .image(RED_PIXEL_PNG, "image/png")
        .resource(
            Content::text(r#"{"test":"data","value":123}"#)
                .uri("test://mixed-content-resource")
                .mime_type("application/json"),
        ))
}

/// Logs three messages at info level while it runs, 50 ms apart.
#[tool(effect = "none")]
pub async fn test_tool_with_logging() -> Result<ToolContent, AgentError> {
    tracing::info!("Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    tracing::info!("Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    tracing::info!("Tool execution completed");
    Ok(ToolContent::new().text("Logged three messages while running."))
}

/// Reports progress 0, 50 and 100 of 100. Reports reach the client at most one per
/// `carmy::execution::PROGRESS_INTERVAL`, so the steps are that far apart.
#[tool(effect = "none")]
pub async fn test_tool_with_progress(context: &Context) -> Result<ToolContent, AgentError> {
    let step = carmy::execution::PROGRESS_INTERVAL + Duration::from_millis(20);
    for done in [0.0, 50.0, 100.0] {
        if done > 0.0 {
            tokio::time::sleep(step).await;
        }
        context.progress(done, Some(100.0), None);
    }
    Ok(ToolContent::new().text("Reported progress 0, 50 and 100 of 100."))
}

/// Always fails.
#[tool(effect = "none")]
pub async fn test_error_handling() -> Result<ToolContent, AgentError> {
    Err(AgentError::internal(
        "This tool intentionally returns an error for testing",
    ))
}

/// Logs at every level; a client sees what it asked for (`logging/setLevel`, or the request's
/// `logLevel` on 2026-07-28), and nothing when it asked for nothing.
#[tool(effect = "none")]
pub async fn test_logging_tool() -> Result<ToolContent, AgentError> {
    tracing::debug!("a debug message");
    tracing::info!("an info message");
    tracing::warn!("a warning");
    tracing::error!("an error message");
    Ok(ToolContent::new().text("Logged at debug, info, warning and error."))
}

/// The arguments of `json_schema_2020_12_tool`, whose schema is written by hand to use JSON
/// Schema 2020-12's wider vocabulary: `$defs` with an `$anchor`, `allOf`/`anyOf`,
/// `if`/`then`/`else`. The everything server publishes schemas unchanged
/// (`SchemaProfile::Raw`), and the runtime validates arguments against this one.
#[derive(Debug, serde::Deserialize)]
pub struct Contact {
    /// The contact's name.
    pub name: Option<String>,
    /// How to reach them.
    #[serde(rename = "contactMethod")]
    pub contact_method: Option<String>,
    /// Their phone number.
    pub phone: Option<String>,
    /// Their email address.
    pub email: Option<String>,
    /// Their address.
    pub address: Option<serde_json::Value>,
}

impl schemars::JsonSchema for Contact {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Contact".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
                }
            },
            "properties": {
                "name": { "type": "string" },
                "address": { "$ref": "#/$defs/address" },
                "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                "phone": { "type": "string" },
                "email": { "type": "string" }
            },
            "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
            "if": {
                "properties": { "contactMethod": { "const": "phone" } },
                "required": ["contactMethod"]
            },
            "then": { "required": ["phone"] },
            "else": { "required": ["email"] },
            "additionalProperties": false
        })
    }
}

/// Takes a contact whose schema uses JSON Schema 2020-12's composition and conditionals.
#[tool(effect = "none")]
pub async fn json_schema_2020_12_tool(input: Contact) -> Result<ToolContent, AgentError> {
    let how = match input.contact_method.as_deref() {
        Some("phone") => format!("by phone at {}", input.phone.unwrap_or_default()),
        _ => format!("by email at {}", input.email.unwrap_or_default()),
    };
    Ok(ToolContent::new().text(format!(
        "Will reach {} {how}.",
        input.name.as_deref().unwrap_or("them")
    )))
}

/// The arguments of `test_x_mcp_header`: `region` is repeated in the `Mcp-Param-Region`
/// header on 2026-07-28 (SEP-2243), which the server checks against the body.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Routed {
    /// Where the request is routed; also in `Mcp-Param-Region`.
    #[schemars(extend("x-mcp-header" = "Region"))]
    pub region: String,
    /// What to echo.
    pub message: Option<String>,
}

/// Echoes its message and the region it was routed by.
#[tool(effect = "none")]
pub async fn test_x_mcp_header(input: Routed) -> Result<ToolContent, AgentError> {
    Ok(ToolContent::new().text(format!(
        "{} (routed by region {})",
        input.message.as_deref().unwrap_or(""),
        input.region
    )))
}
