//! Content for a person or a model to look at: text, images, audio and embedded resources.
//! Prompts render to messages of it; a tool whose result is not JSON data returns it
//! ([`ToolContent`]).
//!
//! A tool's output is kept as JSON (an execution's record, the outcome replayed to a retry), so
//! [`ToolContent`] has a JSON form: an array of blocks tagged by `type`, bytes in base64. The
//! form is the one agent hosts already use for content, so nothing is lost on the way out.

use std::borrow::Cow;

use base64::Engine as _;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::contents::{Body, Content};

/// One piece of content.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// Text.
    Text(String),
    /// An image: its bytes (sent base64-encoded) and MIME type.
    Image {
        /// The image's bytes.
        data: Vec<u8>,
        /// Its MIME type, e.g. `image/png`.
        mime_type: String,
    },
    /// A sound: its bytes (sent base64-encoded) and MIME type.
    Audio {
        /// The sound's bytes.
        data: Vec<u8>,
        /// Its MIME type, e.g. `audio/wav`.
        mime_type: String,
    },
    /// A resource embedded whole: a [`Content`] that names its URI.
    Resource(Content),
}

impl ContentBlock {
    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// An image.
    pub fn image(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// A sound.
    pub fn audio(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// A resource embedded whole; `content` should name its URI ([`Content::uri`]).
    pub fn resource(content: Content) -> Self {
        Self::Resource(content)
    }
}

/// What a tool returns when its result is content rather than JSON data: text, images, audio,
/// embedded resources, in order. Such a tool publishes no output schema, and its result has no
/// `structuredContent`: the blocks are the result.
///
/// ```
/// use carmy_core::{Content, ToolContent};
///
/// let shown = ToolContent::new()
///     .text("The chart, and the data behind it:")
///     .image(vec![0x89, b'P', b'N', b'G'], "image/png")
///     .resource(Content::text("month,sales\n1,20").uri("reports://sales.csv").mime_type("text/csv"));
/// assert_eq!(shown.len(), 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolContent(Vec<ContentBlock>);

impl ToolContent {
    /// No block yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a block.
    #[must_use]
    pub fn with(mut self, block: ContentBlock) -> Self {
        self.0.push(block);
        self
    }

    /// Adds text.
    #[must_use]
    pub fn text(self, text: impl Into<String>) -> Self {
        self.with(ContentBlock::text(text))
    }

    /// Adds an image.
    #[must_use]
    pub fn image(self, data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        self.with(ContentBlock::image(data, mime_type))
    }

    /// Adds a sound.
    #[must_use]
    pub fn audio(self, data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        self.with(ContentBlock::audio(data, mime_type))
    }

    /// Adds a resource embedded whole.
    #[must_use]
    pub fn resource(self, content: Content) -> Self {
        self.with(ContentBlock::resource(content))
    }

    /// The blocks, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, ContentBlock> {
        self.0.iter()
    }

    /// How many blocks.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads back the JSON form a tool's output is kept in.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, serde_json::Error> {
        Self::deserialize(value)
    }
}

impl From<ContentBlock> for ToolContent {
    fn from(block: ContentBlock) -> Self {
        Self(vec![block])
    }
}

impl FromIterator<ContentBlock> for ToolContent {
    fn from_iter<I: IntoIterator<Item = ContentBlock>>(blocks: I) -> Self {
        Self(blocks.into_iter().collect())
    }
}

impl IntoIterator for ToolContent {
    type Item = ContentBlock;
    type IntoIter = std::vec::IntoIter<ContentBlock>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// The JSON form of a block.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: Cow<'a, str>,
    },
    Audio {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: Cow<'a, str>,
    },
    Resource {
        resource: WireResource<'a>,
    },
}

#[derive(Serialize, Deserialize)]
struct WireResource<'a> {
    uri: Cow<'a, str>,
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    mime_type: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blob: Option<String>,
}

fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn decode<E: serde::de::Error>(text: &str) -> Result<Vec<u8>, E> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|error| E::custom(format!("invalid base64: {error}")))
}

impl<'a> Wire<'a> {
    fn of(block: &'a ContentBlock) -> Self {
        match block {
            ContentBlock::Text(text) => Wire::Text {
                text: Cow::Borrowed(text),
            },
            ContentBlock::Image { data, mime_type } => Wire::Image {
                data: encode(data),
                mime_type: Cow::Borrowed(mime_type),
            },
            ContentBlock::Audio { data, mime_type } => Wire::Audio {
                data: encode(data),
                mime_type: Cow::Borrowed(mime_type),
            },
            ContentBlock::Resource(content) => {
                let (text, blob) = match content.body() {
                    Body::Text(text) => (Some(Cow::Borrowed(text.as_str())), None),
                    Body::Blob(bytes) => (None, Some(encode(bytes))),
                };
                Wire::Resource {
                    resource: WireResource {
                        uri: Cow::Borrowed(content.uri_of().unwrap_or_default()),
                        mime_type: content.mime_type_of().map(Cow::Borrowed),
                        text,
                        blob,
                    },
                }
            }
        }
    }

    fn into_block<E: serde::de::Error>(self) -> Result<ContentBlock, E> {
        Ok(match self {
            Wire::Text { text } => ContentBlock::Text(text.into_owned()),
            Wire::Image { data, mime_type } => ContentBlock::image(decode(&data)?, mime_type),
            Wire::Audio { data, mime_type } => ContentBlock::audio(decode(&data)?, mime_type),
            Wire::Resource { resource } => {
                let content = match (resource.text, resource.blob) {
                    (Some(text), None) => Content::text(text.into_owned()),
                    (None, Some(blob)) => Content::blob(decode(&blob)?),
                    _ => return Err(E::custom("a resource holds either `text` or `blob`")),
                };
                let content = content.uri(resource.uri.into_owned());
                ContentBlock::Resource(match resource.mime_type {
                    Some(mime_type) => content.mime_type(mime_type.into_owned()),
                    None => content,
                })
            }
        })
    }
}

impl Serialize for ToolContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(Wire::of))
    }
}

impl<'de> Deserialize<'de> for ToolContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Wire<'de>>::deserialize(deserializer)?
            .into_iter()
            .map(Wire::into_block::<D::Error>)
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

impl JsonSchema for ToolContent {
    fn schema_name() -> Cow<'static, str> {
        "ToolContent".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let bytes = json_schema!({
            "type": "object",
            "properties": {
                "type": { "type": "string" },
                "data": { "type": "string", "contentEncoding": "base64" },
                "mimeType": { "type": "string" }
            },
            "required": ["type", "data", "mimeType"]
        });
        json_schema!({
            "type": "array",
            "items": {
                "type": "object",
                "properties": { "type": { "enum": ["text", "image", "audio", "resource"] } },
                "required": ["type"],
                "oneOf": [
                    {
                        "type": "object",
                        "properties": { "type": { "const": "text" }, "text": { "type": "string" } },
                        "required": ["type", "text"]
                    },
                    {
                        "allOf": [bytes],
                        "properties": { "type": { "enum": ["image", "audio"] } }
                    },
                    {
                        "type": "object",
                        "properties": {
                            "type": { "const": "resource" },
                            "resource": {
                                "type": "object",
                                "properties": {
                                    "uri": { "type": "string" },
                                    "mimeType": { "type": "string" },
                                    "text": { "type": "string" },
                                    "blob": { "type": "string", "contentEncoding": "base64" }
                                },
                                "required": ["uri"]
                            }
                        },
                        "required": ["type", "resource"]
                    }
                ]
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_json_form_round_trips_every_block() {
        let shown = ToolContent::new()
            .text("hello")
            .image([1u8, 2, 3], "image/png")
            .audio([4u8, 5], "audio/wav")
            .resource(
                Content::text("{}")
                    .uri("test://a")
                    .mime_type("application/json"),
            )
            .resource(Content::blob([0u8, 255]).uri("test://b"));
        let value = serde_json::to_value(&shown).unwrap();
        assert_eq!(value[0], json!({ "type": "text", "text": "hello" }));
        assert_eq!(
            value[1],
            json!({ "type": "image", "data": "AQID", "mimeType": "image/png" })
        );
        assert_eq!(
            value[4]["resource"],
            json!({ "uri": "test://b", "blob": "AP8=" })
        );
        assert_eq!(ToolContent::from_json(&value).unwrap(), shown);
    }

    #[test]
    fn the_json_form_is_checked() {
        for bad in [
            json!([{ "type": "image", "data": "not base64!", "mimeType": "image/png" }]),
            json!([{ "type": "resource", "resource": { "uri": "x", "text": "a", "blob": "AA==" } }]),
            json!([{ "type": "video" }]),
            json!({ "type": "text", "text": "not in an array" }),
        ] {
            assert!(ToolContent::from_json(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_schema_accepts_what_serializes() {
        let schema = serde_json::to_value(schemars::schema_for!(ToolContent)).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let shown = ToolContent::new()
            .text("a")
            .audio([1u8], "audio/wav")
            .resource(Content::text("b").uri("test://b"));
        let value = serde_json::to_value(&shown).unwrap();
        assert!(validator.is_valid(&value), "{value}");
        assert!(!validator.is_valid(&json!([{ "type": "text" }])));
    }
}
