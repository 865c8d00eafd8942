//! Scopes to grants and access: what each scope of a token gives its calls, and, for a call a
//! token's scopes do not allow, which scope would (step-up).

use std::sync::Arc;

use carmy_core::{Access, Context, ToolEntry};

use super::{OAuthError, metadata::Resource};

/// The prefix that makes what a scope gives an access rule rather than a grant.
const ALLOW: &str = "allow:";

/// What each scope gives, in the order the scopes were declared.
#[derive(Clone, Default)]
pub(super) struct ScopeMap {
    scopes: Arc<Vec<Scope>>,
    /// Every scope's rules together: the kinds (tools, resources, prompts) scopes restrict.
    all: Option<Access>,
}

struct Scope {
    name: String,
    grants: Vec<Arc<str>>,
    /// The scope's `allow:` rules, as written (without the prefix).
    rules: Vec<String>,
    /// The same, read; `None` when it has none.
    access: Option<Access>,
}

/// Whether `name` is a scope token of RFC 6749 (§3.3): printable ASCII but space, `"` and `\`.
pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|byte| matches!(byte, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

impl ScopeMap {
    pub(super) fn insert<I, S>(&mut self, name: &str, gives: I) -> Result<(), OAuthError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        if !valid_name(name) {
            return Err(OAuthError::ScopeName(name.to_owned()));
        }
        let mut grants = Vec::new();
        let mut rules = Vec::new();
        for item in gives {
            let item = item.as_ref().trim();
            match item.strip_prefix(ALLOW) {
                Some(rule) => rules.push(rule.to_owned()),
                None => grants.push(Arc::from(item)),
            }
        }
        let access = match rules.is_empty() {
            true => None,
            false => Some(Access::parse(&rules).map_err(|error| OAuthError::Rule {
                scope: name.to_owned(),
                problem: error.to_string(),
            })?),
        };
        let scope = Scope {
            name: name.to_owned(),
            grants,
            rules,
            access,
        };
        // Only changed while configured, before the map is shared with any request.
        let scopes =
            Arc::get_mut(&mut self.scopes).expect("a scope map is configured before it is shared");
        scopes.retain(|existing| existing.name != name);
        scopes.push(scope);
        let rules: Vec<&str> = scopes
            .iter()
            .flat_map(|scope| scope.rules.iter().map(String::as_str))
            .collect();
        self.all = (!rules.is_empty()).then(|| Access::parse(&rules).expect("rules already read"));
        Ok(())
    }

    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.scopes.iter().map(|scope| scope.name.as_str())
    }
}

/// What a token's scopes give.
pub(super) struct TokenScopes {
    granted: Vec<String>,
    grants: Vec<Arc<str>>,
    access: Option<Access>,
}

impl TokenScopes {
    pub(super) fn new(granted: Vec<String>, map: &ScopeMap) -> Self {
        let mut grants = Vec::new();
        let mut rules: Vec<&str> = Vec::new();
        for scope in map
            .scopes
            .iter()
            .filter(|scope| granted.contains(&scope.name))
        {
            grants.extend(scope.grants.iter().cloned());
            rules.extend(scope.rules.iter().map(String::as_str));
        }
        // Rules were read when the map was built: their union reads as well. It restricts every
        // kind some scope's rules do, so that a kind this token's scopes say nothing of is
        // closed to it, not open.
        let access = map.all.as_ref().map(|all| {
            Access::parse(&rules)
                .expect("rules already read")
                .restricting_kinds_of(all)
        });
        Self {
            granted,
            grants,
            access,
        }
    }

    pub(super) fn grants(&self) -> impl Iterator<Item = Arc<str>> + '_ {
        self.grants.iter().cloned()
    }

    pub(super) fn access(&self) -> Option<Access> {
        self.access.clone()
    }
}

/// Carried by the context of a request authenticated by [`OAuth`](super::OAuth): what the HTTP
/// layer needs to answer a call its token's scopes do not allow with `403 insufficient_scope`
/// naming a scope that would, instead of letting the runtime refuse it.
pub(crate) struct StepUp {
    /// The context before the token's restrictions: a tool it refuses, no scope can allow.
    base: Context,
    token: TokenScopes,
    map: ScopeMap,
    resource: Resource,
}

impl StepUp {
    pub(super) fn new(
        base: Context,
        token: TokenScopes,
        map: ScopeMap,
        resource: Resource,
    ) -> Self {
        Self {
            base,
            token,
            map,
            resource,
        }
    }

    /// For a call of `tool` the token may not make, the `WWW-Authenticate` challenge asking
    /// for its scopes plus the first declared scope that allows it, and why; `None` when the
    /// token may call it, or when no scope would help.
    pub(crate) fn challenge(&self, tool: &ToolEntry) -> Option<(String, String)> {
        let refused = self
            .token
            .access
            .as_ref()
            .is_some_and(|access| !access.allows(tool));
        if !refused || !self.base.allows_tool(tool) {
            return None;
        }
        let scope = self.map.scopes.iter().find(|scope| {
            scope
                .access
                .as_ref()
                .is_some_and(|access| access.allows(tool))
        })?;
        let mut needed = self.token.granted.clone();
        needed.push(scope.name.clone());
        let reason = format!("calling `{}` needs the scope {}", tool.name(), scope.name);
        let challenge = self.resource.insufficient_scope(&needed, &reason);
        Some((challenge, reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_names_follow_rfc_6749() {
        for name in [
            "shop:read",
            "orders.write",
            "https://api.example/x",
            "a!#[]~",
        ] {
            assert!(valid_name(name), "{name}");
        }
        for name in ["", "two words", "quo\"te", "back\\slash", "tab\t"] {
            assert!(!valid_name(name), "{name:?}");
        }
    }

    #[test]
    fn scopes_restrict_only_once_one_has_a_rule() {
        let mut map = ScopeMap::default();
        map.insert("admin", ["confirm:cancel_order"])
            .expect("inserts");
        let token = TokenScopes::new(vec!["admin".into()], &map);
        assert!(token.access().is_none());
        assert_eq!(
            token
                .grants()
                .map(|grant| grant.to_string())
                .collect::<Vec<_>>(),
            ["confirm:cancel_order"]
        );
        map.insert("read", ["allow:effect:read"]).expect("inserts");
        let token = TokenScopes::new(vec!["admin".into()], &map);
        let access = token.access().expect("restricted");
        assert!(!access.allows_tool("search", carmy_core::Effect::Read));
        let token = TokenScopes::new(vec!["admin".into(), "read".into()], &map);
        assert!(
            token
                .access()
                .expect("restricted")
                .allows_tool("search", carmy_core::Effect::Read)
        );
    }

    #[test]
    fn a_bad_rule_names_its_scope() {
        let mut map = ScopeMap::default();
        let error = map.insert("x", ["allow:effect:all"]).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("scope `x`: access rule `effect:all`"),
            "{error}"
        );
        assert_eq!(
            map.insert("a b", ["allow:*"]).unwrap_err(),
            OAuthError::ScopeName("a b".into())
        );
    }
}
