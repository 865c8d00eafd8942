//! Content blocks (prompt messages, tool results) as MCP content: bytes base64-encoded, an
//! embedded resource with its URI and MIME type.

use base64::Engine as _;
use carmy_core::{Body, ContentBlock};
use rmcp::model::{ContentBlock as McpBlock, ResourceContents};

/// One block, as MCP content.
pub(crate) fn block(block: &ContentBlock) -> McpBlock {
    let base64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    match block {
        ContentBlock::Text(text) => McpBlock::text(text.clone()),
        ContentBlock::Image { data, mime_type } => McpBlock::image(base64(data), mime_type),
        ContentBlock::Audio { data, mime_type } => McpBlock::audio(base64(data), mime_type),
        ContentBlock::Resource(content) => {
            let uri = content.uri_of().unwrap_or_default().to_owned();
            let embedded = match content.body() {
                Body::Blob(bytes) => ResourceContents::blob(base64(bytes), uri),
                Body::Text(text) => ResourceContents::text(text.clone(), uri),
                _ => ResourceContents::text(String::new(), uri),
            };
            McpBlock::resource(match content.mime_type_of() {
                Some(mime_type) => embedded.with_mime_type(mime_type),
                None => embedded,
            })
        }
        _ => McpBlock::text(String::new()),
    }
}
