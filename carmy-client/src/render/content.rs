//! Content blocks (a tool's result, a prompt's messages) and resource contents: text as text,
//! JSON indented, bytes summarised and, with `-o FILE`, saved.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

use crate::{escape, exit::Failure};

/// Where `-o FILE` puts the bytes of a result: the first binary part in FILE, the next ones in
/// FILE.2, FILE.3… so that no part silently overwrites another.
#[derive(Debug)]
pub(crate) struct Saver {
    path: Option<PathBuf>,
    saved: usize,
}

impl Saver {
    pub(crate) fn new(path: Option<&Path>) -> Self {
        Self {
            path: path.map(Path::to_path_buf),
            saved: 0,
        }
    }

    /// Saves `bytes` if `-o` was given; returns where.
    fn save(&mut self, bytes: &[u8]) -> Result<Option<PathBuf>, Failure> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        self.saved += 1;
        let target = if self.saved == 1 {
            path.clone()
        } else {
            let mut name = path.as_os_str().to_owned();
            name.push(format!(".{}", self.saved));
            PathBuf::from(name)
        };
        std::fs::write(&target, bytes).map_err(|error| {
            Failure::Output(format!("cannot write {}: {error}", target.display()))
        })?;
        Ok(Some(target))
    }
}

/// A result's content blocks, one after the other.
pub(crate) fn contents(blocks: &[Value], saver: &mut Saver) -> Result<String, Failure> {
    let mut out = String::new();
    for block in blocks {
        let text = match block.get("type").and_then(Value::as_str) {
            Some("text") => text(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some(kind @ ("image" | "audio")) => {
                let data = block.get("data").and_then(Value::as_str).unwrap_or("");
                let mime = block
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or(kind);
                binary(mime, data, saver)?
            }
            Some("resource") => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                format!(
                    "[resource {}]\n{}",
                    escape::field(uri),
                    one_resource(&resource, saver)?
                )
            }
            Some("resource_link") => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                format!("[link {}] {}", escape::field(uri), escape::field(name))
            }
            // A block of a kind this carmy does not know: shown as the server sent it.
            _ => crate::escape::pretty(block),
        };
        push_part(&mut out, &text);
    }
    Ok(out)
}

/// `resources/read` contents.
pub(crate) fn resource_contents(items: &[Value], saver: &mut Saver) -> Result<String, Failure> {
    let mut out = String::new();
    for item in items {
        push_part(&mut out, &one_resource(item, saver)?);
    }
    Ok(out)
}

fn one_resource(item: &Value, saver: &mut Saver) -> Result<String, Failure> {
    let mime = item
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("application/octet-stream");
    if let Some(blob) = item.get("blob").and_then(Value::as_str) {
        return binary(mime, blob, saver);
    }
    let body = item.get("text").and_then(Value::as_str).unwrap_or("");
    // `-o` on a text resource saves the text as it came, so a file can be fetched whole.
    if let Some(target) = saver.save(body.as_bytes())? {
        return Ok(format!(
            "[{}, {} bytes, saved to {}]",
            escape::field(mime),
            body.len(),
            target.display()
        ));
    }
    Ok(text(body))
}

fn push_part(out: &mut String, part: &str) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(part);
}

/// Text as it is, unless it is a JSON object or array, which is indented.
fn text(body: &str) -> String {
    let trimmed = body.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<Value>(body)
    {
        return crate::escape::pretty(&value);
    }
    body.to_owned()
}

/// `[image/png, 1234 bytes]`, and where it was saved.
fn binary(mime: &str, base64: &str, saver: &mut Saver) -> Result<String, Failure> {
    let mime = escape::field(mime);
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(base64) else {
        return Ok(format!("[{mime}, not valid base64]"));
    };
    Ok(match saver.save(&bytes)? {
        Some(target) => format!(
            "[{mime}, {} bytes, saved to {}]",
            bytes.len(),
            target.display()
        ),
        None => format!("[{mime}, {} bytes]", bytes.len()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Saver, contents};

    #[test]
    fn text_json_and_bytes_each_read_well() {
        let blocks = [
            json!({"type": "text", "text": "plain words"}),
            json!({"type": "text", "text": "{\"a\":1}"}),
            json!({"type": "image", "mimeType": "image/png", "data": "iVBORw=="}),
        ];
        let shown = contents(&blocks, &mut Saver::new(None)).unwrap();
        assert_eq!(shown, "plain words\n{\n  \"a\": 1\n}\n[image/png, 4 bytes]");
    }
}
