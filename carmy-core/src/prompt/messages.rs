//! What rendering a prompt gives: messages for the model, each from the user or the assistant,
//! each text, an image, a sound, or a resource embedded whole.

pub use crate::message::{Message, MessageContent, Role};

/// What a prompt renders to: its messages, in order, and an optional description of this
/// rendering.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Messages {
    description: Option<String>,
    messages: Vec<Message>,
}

impl Messages {
    /// No message yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a message.
    #[must_use]
    pub fn with(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// Describes this rendering (the prompt's description is used otherwise).
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The description of this rendering, if set.
    pub fn description_of(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The messages, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Message> {
        self.messages.iter()
    }

    /// How many messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

impl FromIterator<Message> for Messages {
    fn from_iter<I: IntoIterator<Item = Message>>(messages: I) -> Self {
        Self {
            description: None,
            messages: messages.into_iter().collect(),
        }
    }
}

impl From<Message> for Messages {
    fn from(message: Message) -> Self {
        std::iter::once(message).collect()
    }
}

impl From<Vec<Message>> for Messages {
    fn from(messages: Vec<Message>) -> Self {
        messages.into_iter().collect()
    }
}

/// What a prompt's render may return: [`Messages`], one [`Message`], a `Vec<Message>`, or a
/// `String` (one user message).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be what a prompt returns",
    label = "not prompt messages",
    note = "return `carmy::Messages`, a `carmy::Message`, a `Vec<Message>`, or a `String` (one user message)"
)]
pub trait IntoMessages: Send + 'static {
    /// The messages.
    fn into_messages(self) -> Messages;
}

impl IntoMessages for Messages {
    fn into_messages(self) -> Messages {
        self
    }
}

impl IntoMessages for Message {
    fn into_messages(self) -> Messages {
        self.into()
    }
}

impl IntoMessages for Vec<Message> {
    fn into_messages(self) -> Messages {
        self.into()
    }
}

impl IntoMessages for String {
    fn into_messages(self) -> Messages {
        Message::user(self).into()
    }
}
