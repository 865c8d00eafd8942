// A resource at a fixed URI: no input (it takes `NoInput`), the context borrowed, bytes out.
// `description` and `title` are the docs and the attribute; `mime_type` is spelled out.
use carmy::prelude::*;

/// The store's logo.
#[resource(
    uri = "shop://brand/logo.png",
    title = "Logo",
    mime_type = "image/png",
    timeout = "2s"
)]
pub async fn logo(ctx: &Context) -> Result<Vec<u8>, AgentError> {
    tracing::info!(principal = ctx.principal(), "logo read");
    Ok(LOGO.to_vec())
}
