//! What reading a resource gives: one or more contents, each text or bytes, with its URI and
//! MIME type.

use serde::Serialize;

use crate::error::AgentError;

/// What a read returns: one content or several (a directory's files, a document's parts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contents(Vec<Content>);

impl Contents {
    /// No content yet; add with [`push`](Self::push).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one content.
    pub fn push(&mut self, content: Content) {
        self.0.push(content);
    }

    /// Each content, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Content> {
        self.0.iter()
    }

    /// How many contents.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The contents, owned.
    pub fn into_vec(self) -> Vec<Content> {
        self.0
    }
}

impl From<Content> for Contents {
    fn from(content: Content) -> Self {
        Self(vec![content])
    }
}

impl FromIterator<Content> for Contents {
    fn from_iter<I: IntoIterator<Item = Content>>(contents: I) -> Self {
        Self(contents.into_iter().collect())
    }
}

/// One content: text or bytes, for the URI read unless it names another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Content {
    uri: Option<String>,
    mime_type: Option<String>,
    body: Body,
}

/// The body of a content.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Body {
    /// Text (UTF-8).
    Text(String),
    /// Bytes, sent base64-encoded as a `blob`.
    Blob(Vec<u8>),
}

impl Content {
    /// Text, of the resource's MIME type unless [`mime_type`](Self::mime_type) says otherwise.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            uri: None,
            mime_type: None,
            body: Body::Text(text.into()),
        }
    }

    /// Bytes, sent as a base64 `blob`.
    pub fn blob(bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            uri: None,
            mime_type: None,
            body: Body::Blob(bytes.into()),
        }
    }

    /// `value` as JSON text (`application/json`).
    pub fn json(value: &impl Serialize) -> Result<Self, AgentError> {
        let text = serde_json::to_string(value).map_err(|error| {
            AgentError::internal(format!("the resource does not serialize: {error}"))
        })?;
        Ok(Self::text(text).mime_type("application/json"))
    }

    /// The URI this content is of, when not the one read (a content among several).
    #[must_use]
    pub fn uri(mut self, uri: impl Into<String>) -> Self {
        self.uri = Some(uri.into());
        self
    }

    /// Its MIME type, replacing the resource's.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The URI it names, if not the one read.
    pub fn uri_of(&self) -> Option<&str> {
        self.uri.as_deref()
    }

    /// Its own MIME type, if set.
    pub fn mime_type_of(&self) -> Option<&str> {
        self.mime_type.as_deref()
    }

    /// Its body.
    pub fn body(&self) -> &Body {
        &self.body
    }
}

/// What a resource's read may return: text (`String`), bytes (`Vec<u8>`), one [`Content`], or
/// several ([`Contents`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be what a resource returns",
    label = "not resource contents",
    note = "return `String` (text), `Vec<u8>` (bytes), `carmy::Content` or `carmy::Contents`; for JSON, `Content::json(&value)`"
)]
pub trait IntoContents: Send + 'static {
    /// The contents.
    fn into_contents(self) -> Contents;
}

impl IntoContents for Contents {
    fn into_contents(self) -> Contents {
        self
    }
}

impl IntoContents for Content {
    fn into_contents(self) -> Contents {
        self.into()
    }
}

impl IntoContents for String {
    fn into_contents(self) -> Contents {
        Content::text(self).into()
    }
}

impl IntoContents for Vec<u8> {
    fn into_contents(self) -> Contents {
        Content::blob(self).into()
    }
}
