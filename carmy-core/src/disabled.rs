//! What a catalog leaves out while it serves: tools, resources and prompts turned off without a
//! restart. A disabled entry is unknown to everyone, as if it had never been registered: left
//! out of listings, and using it is answered as using something that does not exist
//! (`TOOL_NOT_FOUND`, `RESOURCE_NOT_FOUND`, `PROMPT_NOT_FOUND`, or the permission error a caller
//! held to some entries gets for a missing one).
//!
//! The rules are [`Access`]'s, read the other way: an entry is disabled when a rule matches it.
//! - `send_receipt`, `orders.*`, `*_order`: tools by name or pattern;
//! - `effect:destructive`: every tool of that effect;
//! - `resource:shop://policies/*`: resources whose URI matches (a template by its URI template,
//!   and any URI read that matches, a provider's included);
//! - `prompt:support_*`: prompts whose name matches.
//!
//! An empty list disables nothing.

use std::{fmt, str::FromStr};

use crate::{
    access::{Access, AccessError},
    effect::Effect,
};

/// The tools, resources and prompts a catalog leaves out (see the [module](self)).
///
/// ```
/// use carmy_core::{Disabled, Effect};
///
/// let disabled = Disabled::parse(["send_receipt", "prompt:draft_*"]).unwrap();
/// assert!(disabled.tool("send_receipt", Effect::ExternalWrite));
/// assert!(!disabled.tool("search_products", Effect::Read));
/// assert!(disabled.prompt("draft_reply"));
/// assert!(!disabled.resource("shop://catalog"));
/// assert!(Disabled::parse(Vec::<String>::new()).unwrap().is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Disabled {
    /// `None`: nothing is disabled (an empty `Access` would allow, here disable, everything).
    rules: Option<Access>,
}

impl Disabled {
    /// Nothing disabled.
    pub fn none() -> Self {
        Self::default()
    }

    /// The entries `rules` match are disabled (see the [module](self)); an empty list disables
    /// nothing. A bad rule is an error naming it, as [`Access::parse`] words it.
    pub fn parse<I, S>(rules: I) -> Result<Self, AccessError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let rules: Vec<S> = rules.into_iter().collect();
        if rules.is_empty() {
            return Ok(Self::none());
        }
        Ok(Self {
            rules: Some(Access::parse(rules)?),
        })
    }

    /// What either disables.
    #[must_use]
    pub fn and(&self, other: &Disabled) -> Disabled {
        match (&self.rules, &other.rules) {
            (Some(one), Some(other)) => Disabled {
                rules: Some(one.either(other)),
            },
            (Some(_), None) => self.clone(),
            (None, _) => other.clone(),
        }
    }

    /// Whether both disable the same resources, rule for rule (what a provider serves is not
    /// known ahead, so only the rules can be compared).
    pub(crate) fn same_resources(&self, other: &Disabled) -> bool {
        let patterns = |disabled: &Disabled| -> Vec<String> {
            disabled.rules.as_ref().map_or_else(Vec::new, |rules| {
                rules.resource_patterns().map(str::to_owned).collect()
            })
        };
        patterns(self) == patterns(other)
    }

    /// Whether nothing is disabled.
    pub fn is_empty(&self) -> bool {
        self.rules.is_none()
    }

    /// Whether the tool named `name`, of `effect`, is disabled.
    pub fn tool(&self, name: &str, effect: Effect) -> bool {
        self.rules
            .as_ref()
            .is_some_and(|rules| rules.restricts_tools() && rules.allows_tool(name, effect))
    }

    /// Whether the resource at `uri` (or the template `uri`) is disabled.
    pub fn resource(&self, uri: &str) -> bool {
        self.rules
            .as_ref()
            .is_some_and(|rules| rules.restricts_resources() && rules.allows_resource(uri))
    }

    /// Whether the prompt named `name` is disabled.
    pub fn prompt(&self, name: &str) -> bool {
        self.rules
            .as_ref()
            .is_some_and(|rules| rules.restricts_prompts() && rules.allows_prompt(name))
    }

    /// Whether it disables some tools: a listing of tools must be filtered.
    pub fn disables_tools(&self) -> bool {
        self.rules.as_ref().is_some_and(Access::restricts_tools)
    }

    /// Whether it disables some resources: a listing of resources must be filtered.
    pub fn disables_resources(&self) -> bool {
        self.rules.as_ref().is_some_and(Access::restricts_resources)
    }

    /// Whether it disables some prompts: a listing of prompts must be filtered.
    pub fn disables_prompts(&self) -> bool {
        self.rules.as_ref().is_some_and(Access::restricts_prompts)
    }
}

impl FromStr for Disabled {
    type Err = AccessError;

    /// Comma-separated rules: `"send_receipt, prompt:draft_*"`.
    fn from_str(text: &str) -> Result<Self, AccessError> {
        Self::parse(text.split(',').filter(|rule| !rule.trim().is_empty()))
    }
}

impl fmt::Display for Disabled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.rules {
            Some(rules) => rules.fmt(f),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_disables_only_its_kind() {
        let tools = Disabled::parse(["effect:destructive", "send_*"]).unwrap();
        assert!(tools.tool("cancel_order", Effect::Destructive));
        assert!(tools.tool("send_receipt", Effect::ExternalWrite));
        assert!(!tools.tool("search_products", Effect::Read));
        // No resource or prompt rule: every resource and prompt stays.
        assert!(!tools.resource("shop://catalog"));
        assert!(!tools.prompt("review_order"));

        let resources = Disabled::parse(["resource:shop://policies/*"]).unwrap();
        assert!(resources.resource("shop://policies/returns"));
        assert!(!resources.resource("shop://catalog"));
        assert!(!resources.tool("search_products", Effect::Read));
        assert!(resources.disables_resources());
        assert!(!resources.disables_tools() && !resources.disables_prompts());
    }

    #[test]
    fn two_lists_disable_what_either_does() {
        let tools = Disabled::parse(["send_*"]).unwrap();
        let prompts = Disabled::parse(["prompt:draft_*"]).unwrap();
        let both = tools.and(&prompts);
        assert!(both.tool("send_receipt", Effect::ExternalWrite));
        assert!(both.prompt("draft_reply"));
        assert!(!both.tool("search_products", Effect::Read));
        assert!(!both.prompt("review_order"));
        assert_eq!(both.to_string(), "send_*, prompt:draft_*");
        assert_eq!(tools.and(&Disabled::none()), tools);
        assert_eq!(Disabled::none().and(&prompts), prompts);
    }

    #[test]
    fn only_resource_rules_count_for_the_same_resources() {
        let one = Disabled::parse(["send_*", "resource:docs://*"]).unwrap();
        let other = Disabled::parse(["prompt:x", "resource:docs://*"]).unwrap();
        assert!(one.same_resources(&other));
        assert!(!one.same_resources(&Disabled::parse(["resource:docs://a"]).unwrap()));
        assert!(Disabled::none().same_resources(&Disabled::parse(["send_*"]).unwrap()));
    }

    #[test]
    fn nothing_is_disabled_by_an_empty_list() {
        let none: Disabled = "".parse().unwrap();
        assert!(none.is_empty());
        assert!(!none.tool("anything", Effect::Write));
        assert!(!none.resource("any://thing"));
        assert!(!none.prompt("anything"));
        assert_eq!(none.to_string(), "");
    }

    #[test]
    fn a_bad_rule_is_named() {
        let error = Disabled::parse(["effect:reed"]).unwrap_err();
        assert!(error.to_string().contains("effect:reed"), "{error}");
    }
}
