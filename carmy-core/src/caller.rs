//! The caller: who is calling and what the host allows, decided by the host only.

use std::{
    any::{Any, TypeId},
    collections::{BTreeSet, HashMap},
    fmt,
    sync::Arc,
};

use crate::{access::Access, effect::Effect, grant::Grant};

/// What the host knows and trusts about a caller: the principal, the grants it holds, the
/// [`Access`] restrictions on what it may use, and any typed extensions. Tool arguments and
/// protocol metadata can never add to it; only the host builds one.
///
/// Policy (approval, admission, rate limits, access) judges a `Caller`; a tool sees it through
/// its [`Context`](crate::Context), which adds the running execution.
///
/// ```
/// use carmy_core::Caller;
///
/// let caller = Caller::new()
///     .with_principal("alice@example.com")
///     .with_grant("confirm:cancel_order");
/// assert!(caller.can_confirm("cancel_order"));
/// assert!(!caller.can_confirm("delete_everything"));
/// ```
#[derive(Clone, Default)]
pub struct Caller {
    principal: Option<Arc<str>>,
    grants: BTreeSet<Grant>,
    /// Restrictions on the tools it may see and call: every one must allow a tool.
    access: Vec<Access>,
    extensions: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Caller {
    /// An anonymous caller with no grants.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the caller. Idempotency keys are scoped by principal, so one principal never sees
    /// another's recorded results.
    #[must_use]
    pub fn with_principal(mut self, principal: impl Into<Arc<str>>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// Adds a grant such as [`Grant::confirm("cancel_order")`](Grant::confirm), also spelled
    /// `"confirm:cancel_order"`.
    #[must_use]
    pub fn with_grant(mut self, grant: impl Into<Grant>) -> Self {
        self.grants.insert(grant.into());
        self
    }

    /// Adds grants.
    #[must_use]
    pub fn with_grants<I, G>(mut self, grants: I) -> Self
    where
        I: IntoIterator<Item = G>,
        G: Into<Grant>,
    {
        self.grants.extend(grants.into_iter().map(Into::into));
        self
    }

    /// Restricts the tools, resources and prompts the caller may see and use to those `access`
    /// allows (see [`Access`]). Restrictions add up: a tool must be allowed by each, so a
    /// narrower list added later (a token's) never widens an earlier one (the server's).
    #[must_use]
    pub fn with_access(mut self, access: Access) -> Self {
        self.access.push(access);
        self
    }

    /// Attaches a typed value (an authenticated user record, a tenant id...), one per type.
    #[must_use]
    pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// The caller, if the host named one.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// The principal, shared: a key that costs no allocation (rate limits).
    pub(crate) fn principal_shared(&self) -> Option<Arc<str>> {
        self.principal.clone()
    }

    /// Whether the host granted exactly `grant` (spelled as in `with_grant`).
    pub fn has_grant(&self, grant: &str) -> bool {
        self.grants.contains(grant)
    }

    /// Whether the host allowed `tool` to run without further confirmation
    /// ([`Grant::confirm`]).
    pub fn can_confirm(&self, tool: &str) -> bool {
        self.grants.iter().any(|grant| grant.confirms(tool))
    }

    /// Every grant, sorted.
    pub fn grants(&self) -> impl Iterator<Item = &Grant> {
        self.grants.iter()
    }

    /// The extension of type `T`, if the host attached one.
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref())
    }

    /// Whether the caller may see and call a tool named `name`, of `effect`: true unless an
    /// [`Access`] restriction leaves it out.
    pub(crate) fn allows_tool_named(&self, name: &str, effect: Effect) -> bool {
        self.access
            .iter()
            .all(|access| access.allows_tool(name, effect))
    }

    /// Whether the caller may see and read the resource at `uri` (or the template `uri`).
    pub fn allows_resource(&self, uri: &str) -> bool {
        self.access.iter().all(|access| access.allows_resource(uri))
    }

    /// Whether the caller may see and get the prompt named `name`.
    pub fn allows_prompt(&self, name: &str) -> bool {
        self.access.iter().all(|access| access.allows_prompt(name))
    }

    /// Whether any [`Access`] restriction applies.
    pub fn is_restricted(&self) -> bool {
        !self.access.is_empty()
    }

    /// Whether an [`Access`] restriction holds the caller to some tools.
    pub fn restricts_tools(&self) -> bool {
        self.access.iter().any(Access::restricts_tools)
    }

    /// Whether an [`Access`] restriction holds the caller to some resources.
    pub fn restricts_resources(&self) -> bool {
        self.access.iter().any(Access::restricts_resources)
    }

    /// Whether an [`Access`] restriction holds the caller to some prompts.
    pub fn restricts_prompts(&self) -> bool {
        self.access.iter().any(Access::restricts_prompts)
    }
}

impl fmt::Debug for Caller {
    // Extensions are opaque and may hold secrets: show their count only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Caller")
            .field("principal", &self.principal)
            .field("grants", &self.grants)
            .field("access", &self.access)
            .field("extensions", &self.extensions.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_exact() {
        let caller =
            Caller::new().with_grants([Grant::confirm("cancel_order"), "confirm:Refund".into()]);
        assert!(caller.can_confirm("cancel_order"));
        assert!(!caller.can_confirm("cancel_orde"));
        assert!(!caller.can_confirm("refund"));
        assert!(!caller.can_confirm("Cancel_order"));
        assert!(caller.has_grant("confirm:Refund"));
    }

    #[test]
    fn extensions_are_typed() {
        #[derive(Debug, PartialEq)]
        struct Tenant(u32);
        let caller = Caller::new().with_extension(Tenant(7));
        assert_eq!(caller.extension::<Tenant>(), Some(&Tenant(7)));
        assert_eq!(caller.extension::<String>(), None);
    }

    #[test]
    fn extensions_do_not_show_in_debug() {
        let caller = Caller::new().with_extension("secret-token".to_owned());
        let shown = format!("{caller:?}");
        assert!(!shown.contains("secret-token"), "{shown}");
        assert!(shown.contains("extensions: 1"), "{shown}");
    }
}
