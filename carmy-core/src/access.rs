//! Access control: which tools a caller may see and call. The host restricts a context with an
//! [`Access`], a list of rules of which one must match; restrictions add up (a token's list
//! narrows the server's, never widens it). A tool outside them is left out of listings and a
//! call of it is refused with `TOOL_NOT_ALLOWED` (a permission error), recorded as rejected,
//! before its arguments are looked at.
//!
//! Rules, kept few:
//! - `search_products`: the tool of that name;
//! - `orders.*`, `*_order`, `*`: names matching the pattern, `*` standing for any characters;
//! - `effect:read`: every tool of that effect (`none`, `read`, `write`, `destructive`,
//!   `external_write`).

use std::{fmt, str::FromStr, sync::Arc};

use crate::{catalog::ToolEntry, effect::Effect};

/// The tools a caller may see and call: at least one rule must match.
///
/// ```
/// use carmy_core::Access;
///
/// let access: Access = "effect:read, place_order".parse().unwrap();
/// assert_eq!(access.to_string(), "effect:read, place_order");
/// assert!(Access::parse(["orders.*"]).is_ok());
/// assert_eq!(
///     Access::parse(["effect:reed"]).unwrap_err().to_string(),
///     "`effect:reed`: unknown effect `reed`; expected none, read, write, destructive or external_write"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    rules: Arc<[Rule]>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Rule {
    /// A name, or a pattern with `*`.
    Name(Box<str>),
    Effect(Effect),
}

/// A rule that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{rule}`: {problem}")]
pub struct AccessError {
    rule: String,
    problem: String,
}

impl Access {
    /// The access `rules` describe (see the [module](self)); an empty list allows nothing.
    pub fn parse<I, S>(rules: I) -> Result<Self, AccessError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let rules = rules
            .into_iter()
            .map(|rule| Rule::parse(rule.as_ref().trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            rules: rules.into(),
        })
    }

    /// Whether `tool` is allowed.
    pub fn allows(&self, tool: &ToolEntry) -> bool {
        self.allows_tool(tool.name(), tool.effect())
    }

    /// Whether a tool named `name`, of `effect`, is allowed.
    pub fn allows_tool(&self, name: &str, effect: Effect) -> bool {
        self.rules.iter().any(|rule| match rule {
            Rule::Name(pattern) => matches(pattern, name),
            Rule::Effect(allowed) => *allowed == effect,
        })
    }
}

impl FromStr for Access {
    type Err = AccessError;

    /// Comma-separated rules: `"effect:read, place_order"`.
    fn from_str(text: &str) -> Result<Self, AccessError> {
        Self::parse(text.split(',').filter(|rule| !rule.trim().is_empty()))
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, rule) in self.rules.iter().enumerate() {
            if index > 0 {
                f.write_str(", ")?;
            }
            match rule {
                Rule::Name(pattern) => f.write_str(pattern)?,
                Rule::Effect(effect) => write!(f, "effect:{}", effect.as_str())?,
            }
        }
        Ok(())
    }
}

impl Rule {
    fn parse(rule: &str) -> Result<Self, AccessError> {
        let refuse = |problem: String| AccessError {
            rule: rule.to_owned(),
            problem,
        };
        if let Some(effect) = rule.strip_prefix("effect:") {
            return Effect::parse(effect).map(Rule::Effect).ok_or_else(|| {
                refuse(format!(
                    "unknown effect `{effect}`; expected none, read, write, destructive or \
                     external_write"
                ))
            });
        }
        let valid = !rule.is_empty()
            && rule
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*'));
        if !valid {
            return Err(refuse(
                "a rule is a tool name, a pattern of one with `*`, or `effect:EFFECT`".to_owned(),
            ));
        }
        Ok(Rule::Name(rule.into()))
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any characters (none included).
fn matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*`: the whole name.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(matches("orders.*", "orders.create"));
        assert!(matches("orders.*", "orders."));
        assert!(!matches("orders.*", "order.create"));
        assert!(matches("*_order", "place_order"));
        assert!(!matches("*_order", "place_orders"));
        assert!(matches("*", "anything"));
        assert!(matches("get_*_by_*", "get_order_by_id"));
        assert!(!matches("get_*_by_*", "get_order"));
        assert!(matches("a*a", "aa"));
        assert!(!matches("a*a", "a"));
        assert!(matches("search_products", "search_products"));
        assert!(!matches("search_products", "search_products_v2"));
    }

    #[test]
    fn rules_by_name_pattern_and_effect() {
        let access: Access = "effect:read, place_order, admin.*".parse().unwrap();
        assert!(access.allows_tool("get_order", Effect::Read));
        assert!(access.allows_tool("place_order", Effect::Write));
        assert!(access.allows_tool("admin.reset", Effect::Destructive));
        assert!(!access.allows_tool("cancel_order", Effect::Destructive));
        assert!(
            !Access::parse::<_, &str>([])
                .unwrap()
                .allows_tool("x", Effect::None)
        );
    }

    #[test]
    fn bad_rules_are_named() {
        assert_eq!(
            Access::parse(["ok", "no spaces"]).unwrap_err().to_string(),
            "`no spaces`: a rule is a tool name, a pattern of one with `*`, or `effect:EFFECT`"
        );
        assert!(Access::parse([""]).is_err());
    }
}
