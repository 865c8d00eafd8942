// `{+path}` (reserved expansion) is RFC 6570 level 2; Carmy reads level 1 only.
use carmy::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct FileRef {
    path: String,
}

#[resource(uri = "shop://files/{+path}")]
async fn file(input: FileRef) -> Result<String, AgentError> {
    Ok(input.path)
}

fn main() {
    let _ = Carmy::new().resource(file).build();
}
