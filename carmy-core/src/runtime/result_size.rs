//! The bound on a result's size ([`Limits::max_result_bytes`](crate::Limits::max_result_bytes)).
//! A result past it is dropped and its execution fails with `OUTPUT_TOO_LARGE`, before anything
//! records, replays or sends it: what a request id keeps is then that error, so a retry is
//! told again and never runs the tool twice.
//!
//! A tool's output is measured as the JSON it is sent as, serialized into a counter that gives
//! up past the bound, so no copy of it is built; contents and messages by the bytes of their
//! text, bytes counting as their base64 (what a protocol sends), with their URIs and MIME
//! types; a completion by its values.

use std::io;

use serde_json::Value;

use super::Ending;
use crate::{
    completion::Completions,
    content::ContentBlock,
    error::AgentError,
    execution::ExecutionStatus,
    prompt::Messages,
    resource::{Body, Content, Contents},
};

/// A result whose size can be held to a bound.
pub(crate) trait Measured {
    /// Whether it takes at most `max` bytes.
    fn fits(&self, max: usize) -> bool;
}

impl Measured for Value {
    fn fits(&self, max: usize) -> bool {
        serde_json::to_writer(Counter { left: max }, self).is_ok()
    }
}

impl Measured for Contents {
    fn fits(&self, max: usize) -> bool {
        self.iter().map(content_size).fold(0, usize::saturating_add) <= max
    }
}

impl Measured for Messages {
    fn fits(&self, max: usize) -> bool {
        let description = self.description_of().map_or(0, str::len);
        self.iter()
            .map(|message| block_size(message.content()))
            .fold(description, usize::saturating_add)
            <= max
    }
}

impl Measured for Completions {
    fn fits(&self, max: usize) -> bool {
        self.values()
            .iter()
            .map(String::len)
            .fold(0, usize::saturating_add)
            <= max
    }
}

/// `OUTPUT_TOO_LARGE` when `result` takes more than `max` bytes; `kind` and `name` say whose
/// result it is.
pub(super) fn check(
    result: &impl Measured,
    max: usize,
    kind: &str,
    name: &str,
) -> Result<(), AgentError> {
    match result.fits(max) {
        true => Ok(()),
        false => Err(AgentError::output_too_large(kind, name, max)),
    }
}

impl<T: Measured> Ending<'_, T> {
    /// The same ending, unless it succeeded with a result of more than `max` bytes: then it
    /// failed, with `OUTPUT_TOO_LARGE`.
    pub(super) fn within(mut self, max: usize, kind: &str) -> Self {
        if let (ExecutionStatus::Succeeded, Ok(result)) = (self.status, &self.result)
            && let Err(error) = check(result, max, kind, self.target.unwrap_or_default())
        {
            self.status = ExecutionStatus::Failed;
            self.result = Err(error);
        }
        self
    }
}

/// A writer that keeps nothing and fails once more than its bytes were written to it.
struct Counter {
    left: usize,
}

impl io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.left = self
            .left
            .checked_sub(bytes.len())
            .ok_or_else(|| io::Error::other("past the bound"))?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn block_size(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(text) => text.len(),
        ContentBlock::Image { data, mime_type } | ContentBlock::Audio { data, mime_type } => {
            base64_len(data.len()).saturating_add(mime_type.len())
        }
        ContentBlock::Resource(content) => content_size(content),
    }
}

fn content_size(content: &Content) -> usize {
    let body = match content.body() {
        Body::Text(text) => text.len(),
        Body::Blob(bytes) => base64_len(bytes.len()),
    };
    [content.uri_of(), content.mime_type_of()]
        .into_iter()
        .map(|text| text.map_or(0, str::len))
        .fold(body, usize::saturating_add)
}

/// The length of `bytes` bytes in base64, padded.
fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3).saturating_mul(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_measured_as_serialized_and_the_count_stops_past_the_bound() {
        let value = serde_json::json!({ "name": "Ada \"Countess\" Lovelace", "n": [1, 2] });
        let exact = serde_json::to_string(&value).unwrap().len();
        assert!(value.fits(exact));
        assert!(!value.fits(exact - 1));
        assert!(Value::Null.fits(4) && !Value::Null.fits(3));
    }

    #[test]
    fn bytes_count_as_their_base64() {
        assert_eq!(
            (base64_len(0), base64_len(1), base64_len(3), base64_len(4)),
            (0, 4, 4, 8)
        );
        let contents: Contents = [Content::blob(vec![0; 6]).uri("a://b")]
            .into_iter()
            .collect();
        assert!(contents.fits(8 + 5) && !contents.fits(8 + 4));
    }
}
