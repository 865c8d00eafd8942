//! A question for the human, which a call's approver may ask instead of answering.

/// A question for the human in front of the caller, and the state the caller hands back with
/// the answer. The state is opaque to everyone but the approver that made it, which must not
/// trust it unchecked (seal it, bind it to the call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    message: String,
    state: String,
}

impl Question {
    /// A question with the message shown to the human and the state to come back with.
    pub fn new(message: impl Into<String>, state: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            state: state.into(),
        }
    }

    /// What the human is asked.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What the caller sends back with the answer.
    pub fn state(&self) -> &str {
        &self.state
    }
}
