//! Resources: a text, a blob, a template, and one to subscribe to.

use carmy::{AgentError, Content, resource};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::RED_PIXEL_PNG;

/// A static text resource.
#[resource(uri = "test://static-text", mime_type = "text/plain")]
pub async fn static_text() -> Result<String, AgentError> {
    Ok("This is the content of the static text resource.".to_owned())
}

/// A static binary resource: a PNG image.
#[resource(uri = "test://static-binary", mime_type = "image/png")]
pub async fn static_binary() -> Result<Vec<u8>, AgentError> {
    Ok(RED_PIXEL_PNG.to_vec())
}

/// The variables of `test://template/{id}/data`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TemplateId {
    /// Any id.
    pub id: String,
}

/// Data for any id, as JSON.
#[resource(uri = "test://template/{id}/data", mime_type = "application/json")]
pub async fn template_data(input: TemplateId) -> Result<Content, AgentError> {
    Content::json(&serde_json::json!({
        "id": input.id,
        "templateTest": true,
        "data": format!("Data for ID: {}", input.id),
    }))
}

/// A resource clients subscribe to.
#[resource(uri = "test://watched-resource", mime_type = "text/plain")]
pub async fn watched_resource() -> Result<String, AgentError> {
    Ok("This resource is watched for updates.".to_owned())
}
