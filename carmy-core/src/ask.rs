//! Asking the caller's host from inside a tool: a form for the human ([`Ask::Input`]), a
//! completion from the host's model ([`Ask::Sample`]), the roots the user shared
//! ([`Ask::Roots`]).
//!
//! The seam follows [`ProgressSink`](crate::ProgressSink): the tool asks through its
//! [`Context`](crate::Context), an adapter implements [`Asker`] for the protocol it speaks.
//! Protocols answer in one of two ways, and a tool is written the same for both:
//!
//! - **In the call**: the adapter sends the questions and awaits the answers
//!   ([`Asked::Answered`]); the tool goes on where it asked.
//! - **On the caller's next try**: the adapter cannot ask while the call is open (MCP
//!   2026-07-28 is stateless), so it says the call must end with the questions
//!   ([`Asked::Later`]). The runtime stops the tool at its ask and ends the execution with
//!   [`OutcomeKind::InputRequired`](crate::OutcomeKind::InputRequired); the caller comes back
//!   with the answers and the tool runs again from the start, this time finding them. So the
//!   code before an ask may run more than once: ask before having effects. The call's request
//!   id is released, not recorded, when it ends waiting for input.
//!
//! Keys name the questions: a tool asks each question under a key of its choosing, stable
//! from one try to the next, and finds the answer under it.

use std::{collections::BTreeMap, fmt, future::Future, pin::Pin};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{error::AgentError, message::Message};

/// One question for the caller's host.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Ask {
    /// A form for the human: a message, and the JSON Schema of what to fill in (an object of
    /// flat properties).
    Input {
        /// What the human reads.
        message: String,
        /// The form: `{"type": "object", "properties": {...}, "required": [...]}`.
        schema: Value,
    },
    /// A completion from the host's model.
    Sample {
        /// The conversation to complete.
        messages: Vec<Message>,
        /// The most tokens the answer may take.
        max_tokens: u32,
        /// A system prompt, if any.
        system_prompt: Option<String>,
    },
    /// The roots the user shared with the host (directories, files).
    Roots,
}

impl Ask {
    /// A form for the human.
    pub fn input(message: impl Into<String>, schema: Value) -> Self {
        Self::Input {
            message: message.into(),
            schema,
        }
    }

    /// One user message for the host's model to answer in at most `max_tokens`.
    pub fn sample(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Self::Sample {
            messages: vec![Message::user(prompt)],
            max_tokens,
            system_prompt: None,
        }
    }

    /// What kind of question it is.
    pub fn kind(&self) -> AskKind {
        match self {
            Ask::Input { .. } => AskKind::Input,
            Ask::Sample { .. } => AskKind::Sample,
            Ask::Roots => AskKind::Roots,
        }
    }
}

/// The kinds of question, for asking whether a host can answer one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AskKind {
    /// [`Ask::Input`].
    Input,
    /// [`Ask::Sample`].
    Sample,
    /// [`Ask::Roots`].
    Roots,
}

impl AskKind {
    /// A name for messages and error details: `input`, `sample`, `roots`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AskKind::Input => "input",
            AskKind::Sample => "sample",
            AskKind::Roots => "roots",
        }
    }
}

/// Questions asked together, each under its key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Asks(Vec<(String, Ask)>);

impl Asks {
    /// No question yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `ask` under `key` (replacing an earlier one under the same key).
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, ask: Ask) -> Self {
        let key = key.into();
        self.0.retain(|(existing, _)| *existing != key);
        self.0.push((key, ask));
        self
    }

    /// Each question with its key, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Ask)> {
        self.0.iter().map(|(key, ask)| (key.as_str(), ask))
    }

    /// How many questions.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The answers to [`Asks`], by key, as the host sent them; read them with
/// [`input`](Self::input), [`sample`](Self::sample) and [`roots`](Self::roots).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answers(BTreeMap<String, Value>);

impl Answers {
    /// The answers, by key, as hosts send them (adapters build this).
    pub fn new(answers: BTreeMap<String, Value>) -> Self {
        Self(answers)
    }

    /// The answer under `key`, as the host sent it.
    pub fn raw(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// The answer to the form asked under `key`.
    pub fn input(&self, key: &str) -> Result<InputAnswer, AgentError> {
        self.parse(key)
    }

    /// The model's answer to what was asked under `key`.
    pub fn sample(&self, key: &str) -> Result<Sampled, AgentError> {
        self.parse(key)
    }

    /// The roots, asked under `key`.
    pub fn roots(&self, key: &str) -> Result<Vec<Root>, AgentError> {
        #[derive(Deserialize)]
        struct Listed {
            roots: Vec<Root>,
        }
        self.parse::<Listed>(key).map(|listed| listed.roots)
    }

    fn parse<T: for<'de> Deserialize<'de>>(&self, key: &str) -> Result<T, AgentError> {
        let raw = self
            .0
            .get(key)
            .ok_or_else(|| AgentError::internal(format!("nothing was asked under `{key}`")))?;
        T::deserialize(raw).map_err(|error| {
            AgentError::validation(
                crate::error::codes::INVALID_ANSWER,
                format!("the answer to `{key}` is not what was asked: {error}"),
            )
        })
    }
}

/// What the human did with a form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum InputAction {
    /// Filled it in and sent it.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

impl InputAction {
    /// `accept`, `decline` or `cancel`.
    pub const fn as_str(self) -> &'static str {
        match self {
            InputAction::Accept => "accept",
            InputAction::Decline => "decline",
            InputAction::Cancel => "cancel",
        }
    }
}

/// The answer to a form.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct InputAnswer {
    /// What the human did.
    pub action: InputAction,
    /// What they filled in, when they accepted.
    #[serde(default)]
    pub content: Option<Map<String, Value>>,
}

/// The host model's answer.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Sampled {
    /// The model that answered, if the host said.
    #[serde(default)]
    pub model: Option<String>,
    /// What it answered: a content block (`{"type": "text", "text": ...}`) or several.
    pub content: Value,
}

impl Sampled {
    /// The answer's text, when it is text.
    pub fn text(&self) -> Option<&str> {
        fn text_of(block: &Value) -> Option<&str> {
            block.get("text").and_then(Value::as_str)
        }
        match &self.content {
            Value::Array(blocks) => blocks.iter().find_map(text_of),
            block => text_of(block),
        }
    }
}

/// A root the user shared.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// Its URI (`file:///home/me/project`).
    pub uri: String,
    /// Its name, if given.
    #[serde(default)]
    pub name: Option<String>,
}

/// Questions the caller will answer on its next try: what the adapter turns into its
/// protocol's "input required" answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    asks: Asks,
    state: Option<String>,
}

impl Pending {
    /// The questions still unanswered, and the state the caller must send back with the
    /// answers (the adapter's, sealed: the answers given so far).
    pub fn new(asks: Asks, state: Option<String>) -> Self {
        Self { asks, state }
    }

    /// The questions.
    pub fn asks(&self) -> &Asks {
        &self.asks
    }

    /// The state to send back.
    pub fn state(&self) -> Option<&str> {
        self.state.as_deref()
    }
}

/// What an [`Asker`] made of questions.
#[derive(Debug)]
#[non_exhaustive]
pub enum Asked {
    /// Answered, every one.
    Answered(Answers),
    /// To be answered on the caller's next try: the call ends here, waiting for input.
    Later(Pending),
    /// Cannot be asked (the host cannot answer this kind, the asking failed).
    Refused(AgentError),
}

/// Asks the caller's host on a tool's behalf; adapters implement it (carmy-mcp: `sampling`,
/// `elicitation` and `roots` requests to the client, or an `input_required` result).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an asker",
    label = "not an asker",
    note = "implement `can_ask` and `ask` of `carmy_core::Asker` for `{Self}`"
)]
pub trait Asker: Send + Sync + 'static {
    /// Whether the host can answer questions of this kind at all.
    fn can_ask(&self, kind: AskKind) -> bool;

    /// Asks `asks`, together.
    fn ask(&self, asks: &Asks) -> impl Future<Output = Asked> + Send;
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An [`Asker`] behind a pointer.
pub(crate) trait DynAsker: Send + Sync + 'static {
    fn can_ask(&self, kind: AskKind) -> bool;
    fn ask_boxed<'a>(&'a self, asks: &'a Asks) -> BoxFuture<'a, Asked>;
}

impl<A: Asker> DynAsker for A {
    fn can_ask(&self, kind: AskKind) -> bool {
        Asker::can_ask(self, kind)
    }

    fn ask_boxed<'a>(&'a self, asks: &'a Asks) -> BoxFuture<'a, Asked> {
        Box::pin(Asker::ask(self, asks))
    }
}

/// The asker a request carries.
#[derive(Clone)]
pub(crate) struct CallAsker(pub(crate) std::sync::Arc<dyn DynAsker>);

impl fmt::Debug for CallAsker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Asker")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_read_as_hosts_send_them() {
        let answers = Answers::new(BTreeMap::from([
            (
                "name".to_owned(),
                json!({ "action": "accept", "content": { "name": "Alice" } }),
            ),
            (
                "greeting".to_owned(),
                json!({ "role": "assistant", "model": "m", "content": { "type": "text", "text": "Hi" } }),
            ),
            (
                "roots".to_owned(),
                json!({ "roots": [{ "uri": "file:///tmp", "name": "tmp" }] }),
            ),
            ("bad".to_owned(), json!({ "action": "shrug" })),
        ]));
        let input = answers.input("name").unwrap();
        assert_eq!(input.action, InputAction::Accept);
        assert_eq!(input.content.unwrap()["name"], "Alice");
        assert_eq!(answers.sample("greeting").unwrap().text(), Some("Hi"));
        assert_eq!(answers.roots("roots").unwrap()[0].uri, "file:///tmp");
        assert_eq!(
            answers.input("bad").unwrap_err().code(),
            crate::error::codes::INVALID_ANSWER
        );
        assert!(answers.input("unasked").is_err());
    }

    #[test]
    fn a_key_asked_twice_keeps_the_last_question() {
        let asks = Asks::new()
            .with("a", Ask::Roots)
            .with("b", Ask::sample("hi", 5))
            .with("a", Ask::input("?", json!({})));
        let kinds: Vec<_> = asks.iter().map(|(key, ask)| (key, ask.kind())).collect();
        assert_eq!(kinds, [("b", AskKind::Sample), ("a", AskKind::Input)]);
    }
}
