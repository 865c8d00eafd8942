//! Grants: what the host allows a caller, as typed values rather than strings spelled in
//! several places.

use std::{borrow::Borrow, fmt, sync::Arc};

/// Something the host allows a caller. The one Carmy reads itself is [`Grant::confirm`]
/// (`confirm:<tool>`): a tool that needs confirmation runs without asking anyone. Any other
/// spelling is the host's own, carried for its tools to read with
/// [`Context::has_grant`](crate::Context::has_grant).
///
/// ```
/// use carmy_core::Grant;
///
/// let grant = Grant::confirm("cancel_order");
/// assert_eq!(grant.as_str(), "confirm:cancel_order");
/// assert_eq!(grant.confirmed_tool(), Some("cancel_order"));
/// assert_eq!(Grant::from("confirm:cancel_order"), grant);
/// assert_eq!(Grant::from("reports:read").confirmed_tool(), None);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Grant(Arc<str>);

impl Grant {
    /// The prefix of confirmation grants.
    pub const CONFIRM_PREFIX: &'static str = "confirm:";

    /// The grant that lets `tool` run without further confirmation.
    pub fn confirm(tool: &str) -> Self {
        let mut text = String::with_capacity(Self::CONFIRM_PREFIX.len() + tool.len());
        text.push_str(Self::CONFIRM_PREFIX);
        text.push_str(tool);
        Self(text.into())
    }

    /// The grant as spelled (`confirm:cancel_order`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tool this grant confirms, if it is a confirmation grant. Tool names are exact:
    /// `confirm:Cancel_order` confirms nothing named `cancel_order`.
    pub fn confirmed_tool(&self) -> Option<&str> {
        self.0.strip_prefix(Self::CONFIRM_PREFIX)
    }

    /// Whether this grant lets `tool` run without further confirmation.
    pub fn confirms(&self, tool: &str) -> bool {
        self.confirmed_tool() == Some(tool)
    }
}

impl From<&str> for Grant {
    fn from(text: &str) -> Self {
        Self(text.into())
    }
}

impl From<String> for Grant {
    fn from(text: String) -> Self {
        Self(text.into())
    }
}

impl From<Arc<str>> for Grant {
    fn from(text: Arc<str>) -> Self {
        Self(text)
    }
}

impl From<&String> for Grant {
    fn from(text: &String) -> Self {
        Self(text.as_str().into())
    }
}

/// Lets a set of grants be searched by spelling.
impl Borrow<str> for Grant {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// Written as its spelling.
impl serde::Serialize for Grant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Grant {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmation_grants_name_one_tool_exactly() {
        let grant = Grant::confirm("cancel_order");
        assert!(grant.confirms("cancel_order"));
        assert!(!grant.confirms("cancel_orde"));
        assert!(!grant.confirms("Cancel_order"));
        assert!(!Grant::from("confirm:Refund").confirms("refund"));
        assert!(!Grant::from("confirmcancel_order").confirms("cancel_order"));
        assert_eq!(Grant::from("other").confirmed_tool(), None);
        assert_eq!(
            format!("{grant} {grant:?}"),
            "confirm:cancel_order \"confirm:cancel_order\""
        );
    }
}
