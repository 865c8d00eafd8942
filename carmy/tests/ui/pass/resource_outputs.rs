//! Everything a resource may return: text, bytes, one content, several; through a `Result`
//! alias too.

use carmy::{Content, Contents, prelude::*};

mod shop {
    pub type Result<T> = std::result::Result<T, carmy::AgentError>;
}

#[resource(uri = "shop://text")]
async fn text() -> Result<String, AgentError> {
    Ok("text".into())
}

#[resource(uri = "shop://bytes", mime_type = "application/octet-stream")]
async fn bytes() -> Result<Vec<u8>, AgentError> {
    Ok(vec![0, 1, 2])
}

#[resource(uri = "shop://one")]
async fn one() -> shop::Result<Content> {
    Content::json(&["a", "b"])
}

#[resource(uri = "shop://several")]
async fn several() -> Result<Contents, AgentError> {
    Ok([
        Content::text("# Title").mime_type("text/markdown"),
        Content::blob(vec![0xff]).uri("shop://several/raw"),
    ]
    .into_iter()
    .collect())
}

fn main() {
    Carmy::new()
        .resource(text)
        .resource(bytes)
        .resource(one)
        .resource(several)
        .build()
        .unwrap();
}
