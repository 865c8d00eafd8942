//! Access control: which tools, resources and prompts a caller may see and use. The host
//! restricts a context with an [`Access`], a list of rules of which one must match; restrictions
//! add up (a token's list narrows the server's, never widens it). What is outside them is left
//! out of listings, and using it is refused with a permission error (`TOOL_NOT_ALLOWED`,
//! `RESOURCE_NOT_ALLOWED`, `PROMPT_NOT_ALLOWED`), recorded as rejected, before its arguments
//! are looked at; what does not exist is answered the same, so a caller learns nothing of what
//! its rules hide. The resource rules also hold for what a caller gets by other ways: the
//! resources a prompt embeds, and the values a completion suggests when they name resources
//! ([`Completions::naming`](crate::Completions::naming)).
//!
//! Rules, kept few:
//! - `search_products`: the tool of that name;
//! - `orders.*`, `*_order`, `*`: tool names matching the pattern, `*` standing for any
//!   characters;
//! - `effect:read`: every tool of that effect (`none`, `read`, `write`, `destructive`,
//!   `external_write`);
//! - `resource:shop://policies/*`: resources whose URI matches (a template by its URI template);
//! - `prompt:support_*`: prompts whose name matches.
//!
//! A list restricts the kinds it has rules for: `effect:read` holds a caller to some tools and
//! leaves resources and prompts alone, `resource:docs://*` the reverse. An empty list allows
//! nothing, and [`Access::restricting_kinds_of`] makes a list restrict the kinds another does
//! (a union of a token's rules, held to every kind its issuer's rules restrict).

use std::{fmt, str::FromStr, sync::Arc};

use crate::effect::Effect;

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
    kinds: Kinds,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Rule {
    /// A tool's name, or a pattern with `*`.
    Name(Box<str>),
    Effect(Effect),
    /// A resource's URI (or template), or a pattern with `*`.
    Resource(Box<str>),
    /// A prompt's name, or a pattern with `*`.
    Prompt(Box<str>),
}

/// The kinds a list restricts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Kinds {
    tools: bool,
    resources: bool,
    prompts: bool,
}

impl Kinds {
    const ALL: Self = Self {
        tools: true,
        resources: true,
        prompts: true,
    };

    fn of(rules: &[Rule]) -> Self {
        if rules.is_empty() {
            return Self::ALL;
        }
        let mut kinds = Self::default();
        for rule in rules {
            match rule {
                Rule::Name(_) | Rule::Effect(_) => kinds.tools = true,
                Rule::Resource(_) => kinds.resources = true,
                Rule::Prompt(_) => kinds.prompts = true,
            }
        }
        kinds
    }
}

/// A rule that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{rule}`: {problem}")]
pub struct AccessError {
    rule: String,
    problem: String,
}

impl Access {
    /// The access `rules` describe (see the [module](self)): it restricts the kinds the rules
    /// name; an empty list allows nothing.
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
            kinds: Kinds::of(&rules),
            rules: rules.into(),
        })
    }

    /// The same rules, also restricting every kind `other` restricts: a kind they have no rule
    /// for then allows nothing. For a union of some of a larger set's rules (a token's scopes'),
    /// which must not leave unrestricted what the set restricts.
    #[must_use]
    pub fn restricting_kinds_of(mut self, other: &Access) -> Self {
        self.kinds.tools |= other.kinds.tools;
        self.kinds.resources |= other.kinds.resources;
        self.kinds.prompts |= other.kinds.prompts;
        self
    }

    /// Both lists' rules in one: it allows what either allows, and restricts the kinds either
    /// restricts.
    pub(crate) fn either(&self, other: &Access) -> Access {
        Access {
            rules: self
                .rules
                .iter()
                .chain(other.rules.iter())
                .cloned()
                .collect(),
            kinds: Kinds {
                tools: self.kinds.tools || other.kinds.tools,
                resources: self.kinds.resources || other.kinds.resources,
                prompts: self.kinds.prompts || other.kinds.prompts,
            },
        }
    }

    /// Its resource rules' patterns, in order.
    pub(crate) fn resource_patterns(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().filter_map(|rule| match rule {
            Rule::Resource(pattern) => Some(&**pattern),
            _ => None,
        })
    }

    /// Whether a tool named `name`, of `effect`, is allowed.
    pub fn allows_tool(&self, name: &str, effect: Effect) -> bool {
        !self.kinds.tools
            || self.rules.iter().any(|rule| match rule {
                Rule::Name(pattern) => matches(pattern, name),
                Rule::Effect(allowed) => *allowed == effect,
                Rule::Resource(_) | Rule::Prompt(_) => false,
            })
    }

    /// Whether the resource at `uri` (or the template `uri`) is allowed.
    pub fn allows_resource(&self, uri: &str) -> bool {
        !self.kinds.resources
            || self
                .rules
                .iter()
                .any(|rule| matches!(rule, Rule::Resource(pattern) if matches(pattern, uri)))
    }

    /// Whether the prompt named `name` is allowed.
    pub fn allows_prompt(&self, name: &str) -> bool {
        !self.kinds.prompts
            || self
                .rules
                .iter()
                .any(|rule| matches!(rule, Rule::Prompt(pattern) if matches(pattern, name)))
    }

    /// Whether it restricts tools.
    pub fn restricts_tools(&self) -> bool {
        self.kinds.tools
    }

    /// Whether it restricts resources.
    pub fn restricts_resources(&self) -> bool {
        self.kinds.resources
    }

    /// Whether it restricts prompts.
    pub fn restricts_prompts(&self) -> bool {
        self.kinds.prompts
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
                Rule::Resource(pattern) => write!(f, "resource:{pattern}")?,
                Rule::Prompt(pattern) => write!(f, "prompt:{pattern}")?,
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
        let name_like = |text: &str| {
            !text.is_empty()
                && text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*'))
        };
        if let Some(uri) = rule.strip_prefix("resource:") {
            // A URI has few characters a rule cannot hold: none of space, nor of control.
            if uri.is_empty() || uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(refuse(
                    "`resource:` is followed by a URI, or a pattern of one with `*`".to_owned(),
                ));
            }
            return Ok(Rule::Resource(uri.into()));
        }
        if let Some(name) = rule.strip_prefix("prompt:") {
            if !name_like(name) {
                return Err(refuse(
                    "`prompt:` is followed by a prompt name, or a pattern of one with `*`"
                        .to_owned(),
                ));
            }
            return Ok(Rule::Prompt(name.into()));
        }
        if !name_like(rule) {
            return Err(refuse(
                "a rule is a tool name, a pattern of one with `*`, `effect:EFFECT`, \
                 `resource:URI` or `prompt:NAME`"
                    .to_owned(),
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
            "`no spaces`: a rule is a tool name, a pattern of one with `*`, `effect:EFFECT`, \
             `resource:URI` or `prompt:NAME`"
        );
        assert!(Access::parse([""]).is_err());
        assert!(Access::parse(["resource:"]).is_err());
        assert!(Access::parse(["resource:a b"]).is_err());
        assert!(Access::parse(["prompt:a/b"]).is_err());
    }

    #[test]
    fn a_list_restricts_the_kinds_it_names() {
        let tools: Access = "effect:read".parse().unwrap();
        assert!(tools.allows_resource("shop://anything"));
        assert!(tools.allows_prompt("anything"));
        assert!(!tools.allows_tool("place_order", Effect::Write));

        let docs: Access = "resource:docs://*, prompt:support_*".parse().unwrap();
        assert!(docs.allows_tool("place_order", Effect::Write));
        assert!(docs.allows_resource("docs://guide.md"));
        assert!(!docs.allows_resource("shop://orders/1"));
        assert!(docs.allows_prompt("support_reply"));
        assert!(!docs.allows_prompt("sales_pitch"));
        assert_eq!(docs.to_string(), "resource:docs://*, prompt:support_*");

        // A token's share of an issuer's rules: held to every kind the whole set restricts.
        let union = docs
            .clone()
            .restricting_kinds_of(&"resource:x, effect:read".parse().unwrap());
        assert!(!union.allows_tool("place_order", Effect::Write));
        assert!(union.allows_resource("docs://guide.md"));

        let nothing = Access::parse::<_, &str>([]).unwrap();
        assert!(!nothing.allows_resource("docs://guide.md") && !nothing.allows_prompt("p"));
    }
}
