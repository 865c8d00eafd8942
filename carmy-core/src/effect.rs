//! What a tool does to the world, and the execution policy that follows from it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The side effect a tool has. Declared by the author, published to clients, and the source of
/// the runtime's defaults for confirmation and parallel safety.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Effect {
    /// Pure computation: reads nothing outside its input.
    None,
    /// Reads state but never changes it.
    Read,
    /// Changes state owned by this server.
    Write,
    /// Changes state in a way that cannot be undone (delete, cancel, refund...).
    Destructive,
    /// Changes state outside this server: sends an email, calls a payment API.
    ExternalWrite,
}

impl Effect {
    /// Every effect, in the order the attribute documents them.
    pub const ALL: [Effect; 5] = [
        Effect::None,
        Effect::Read,
        Effect::Write,
        Effect::Destructive,
        Effect::ExternalWrite,
    ];

    /// The name used in attributes, logs and `_meta`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::None => "none",
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Destructive => "destructive",
            Effect::ExternalWrite => "external_write",
        }
    }

    /// Parses the attribute spelling (`"external_write"`).
    pub fn parse(name: &str) -> Option<Effect> {
        Effect::ALL
            .into_iter()
            .find(|effect| effect.as_str() == name)
    }

    /// True when running the tool cannot change any state.
    pub const fn is_read_only(self) -> bool {
        matches!(self, Effect::None | Effect::Read)
    }

    /// Tools that change nothing may run side by side; everything else is serialized unless the
    /// author says otherwise.
    pub const fn default_parallel_safe(self) -> bool {
        self.is_read_only()
    }

    /// Irreversible tools need the host's explicit approval unless the author says otherwise.
    pub const fn default_confirmation(self) -> Confirmation {
        match self {
            Effect::Destructive => Confirmation::Required,
            _ => Confirmation::None,
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a tool runs only with the host's grant `confirm:<tool>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confirmation {
    /// Runs without a grant.
    None,
    /// Runs only when the trusted context grants `confirm:<tool>`.
    Required,
}

impl Confirmation {
    /// The name used in attributes, logs and `_meta`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Confirmation::None => "none",
            Confirmation::Required => "required",
        }
    }

    /// Parses the attribute spelling (`"required"`).
    pub fn parse(name: &str) -> Option<Confirmation> {
        match name {
            "none" => Some(Confirmation::None),
            "required" => Some(Confirmation::Required),
            _ => None,
        }
    }
}

impl fmt::Display for Confirmation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_effect() {
        for effect in Effect::ALL {
            assert_eq!(Effect::parse(effect.as_str()), Some(effect));
        }
        assert!(Effect::Read.default_parallel_safe());
        assert!(Effect::None.default_parallel_safe());
        assert!(!Effect::Write.default_parallel_safe());
        assert!(!Effect::ExternalWrite.default_parallel_safe());
        assert_eq!(
            Effect::Destructive.default_confirmation(),
            Confirmation::Required
        );
        assert_eq!(Effect::Write.default_confirmation(), Confirmation::None);
        assert_eq!(Effect::parse("reed"), None);
    }
}
