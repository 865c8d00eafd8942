//! `Message`: one message for a model, from the user or the assistant; what a prompt renders
//! to and what a tool asks the host's model.

use crate::{content::ContentBlock, contents::Content};

/// Who a message is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a rendered prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    role: Role,
    content: MessageContent,
}

/// What a message holds: text, an image, a sound or a resource embedded whole.
pub type MessageContent = ContentBlock;

impl Message {
    /// A message from `role` holding `content`.
    pub fn new(role: Role, content: MessageContent) -> Self {
        Self { role, content }
    }

    /// Text from the user.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, MessageContent::Text(text.into()))
    }

    /// Text from the assistant.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, MessageContent::Text(text.into()))
    }

    /// An image from `role`.
    pub fn image(role: Role, data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::new(
            role,
            MessageContent::Image {
                data: data.into(),
                mime_type: mime_type.into(),
            },
        )
    }

    /// A resource embedded whole, from `role`; `content` should name its URI
    /// ([`Content::uri`]).
    pub fn resource(role: Role, content: Content) -> Self {
        Self::new(role, MessageContent::Resource(content))
    }

    /// Who it is from.
    pub fn role(&self) -> Role {
        self.role
    }

    /// What it holds.
    pub fn content(&self) -> &MessageContent {
        &self.content
    }
}
