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
/// `carmy::PROGRESS_INTERVAL`, so the steps are that far apart.
#[tool(effect = "none")]
pub async fn test_tool_with_progress(context: &Context) -> Result<ToolContent, AgentError> {
    let step = carmy::PROGRESS_INTERVAL + Duration::from_millis(20);
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
