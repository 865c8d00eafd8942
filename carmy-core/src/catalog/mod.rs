//! The validated catalog: every tool with its resolved policy and its schemas, every resource
//! and every prompt, built once; and which of them are disabled now, which changes while it
//! serves (`switch.rs`).

mod switch;
mod tool_entry;

use std::{collections::HashMap, fmt, sync::Arc};

use crate::{
    disabled::Disabled,
    prompt::PromptEntry,
    resource::{ChangeFeed, MAX_URI_LEN, ProviderEntry, ResourceEntry, watch::Hub},
};

pub use crate::limits::MAX_TOOL_NAME_LEN;
pub use switch::{CatalogChanges, ListsChanged};
pub use tool_entry::ToolEntry;

use switch::Switch;

/// Whether `name` is a valid MCP tool name: 1 to 128 characters of `A-Z a-z 0-9 _ - .`.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The tools, resources, resource providers and prompts of a runtime, in registration order,
/// and which of them are [disabled](Catalog::disable) now.
///
/// The lookups that serve a request ([`get`](Self::get), [`prompt`](Self::prompt),
/// [`resolve_resource`](Self::resolve_resource), [`resolve_provider`](Self::resolve_provider))
/// see only what is enabled; the iterators see everything registered, for listings that filter
/// with [`disabled`](Self::disabled).
pub struct Catalog {
    entries: Vec<ToolEntry>,
    by_name: HashMap<&'static str, usize>,
    resources: Vec<ResourceEntry>,
    /// Resources at a fixed URI, by URI.
    fixed: HashMap<&'static str, usize>,
    providers: Vec<ProviderEntry>,
    /// Who listens to the providers' changes. Built with the providers, whose watches it starts
    /// and stops, so it lives beside them.
    pub(crate) watchers: Arc<Hub>,
    prompts: Vec<PromptEntry>,
    switch: Switch,
}

impl Catalog {
    pub(crate) fn new(
        entries: Vec<ToolEntry>,
        resources: Vec<ResourceEntry>,
        providers: Vec<ProviderEntry>,
        prompts: Vec<PromptEntry>,
        reports_own_changes: bool,
        feed: Option<Arc<dyn ChangeFeed>>,
    ) -> Self {
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(index, entry)| (entry.name(), index))
            .collect();
        let fixed = resources
            .iter()
            .enumerate()
            .filter(|(_, resource)| !resource.is_template())
            .map(|(index, resource)| (resource.uri(), index))
            .collect();
        let watchers = Hub::new(
            providers
                .iter()
                .filter(|entry| entry.reports_changes())
                .map(|entry| Arc::clone(&entry.provider))
                .collect(),
            reports_own_changes,
            feed,
        );
        Self {
            entries,
            by_name,
            resources,
            fixed,
            providers,
            watchers,
            prompts,
            switch: Switch::new(),
        }
    }

    /// Disables what `disabled` matches, in place of what this method disabled before, while
    /// serving: a disabled tool, resource or prompt is unknown to every request from now on (one
    /// that is running runs on). What other sources disable ([`disable_as`](Self::disable_as))
    /// stays disabled. Says which lists this changed, as every [listener](Self::changes) hears
    /// it.
    ///
    /// ```
    /// use carmy_core::{Carmy, Disabled};
    ///
    /// let runtime = Carmy::new().build().unwrap();
    /// let changed = runtime.catalog().disable(Disabled::parse(["send_*"]).unwrap());
    /// assert!(!changed.any()); // no tool matched: no list changed
    /// assert_eq!(runtime.catalog().disabled().to_string(), "send_*");
    /// ```
    pub fn disable(&self, disabled: Disabled) -> ListsChanged {
        self.disable_as("", disabled)
    }

    /// As [`disable`](Self::disable), for one `source` of rules (`carmy::cli`'s configuration is
    /// `"configuration"`): its rules replace its own earlier ones only, and what is disabled is
    /// what any source disables.
    pub fn disable_as(&self, source: &'static str, disabled: Disabled) -> ListsChanged {
        self.switch.replace(source, disabled, |before, after| {
            let own_resources = self
                .resources
                .iter()
                .any(|resource| before.resource(resource.uri()) != after.resource(resource.uri()));
            // What providers serve is not known here: any change of the resource rules may
            // change it.
            let provided = !self.providers.is_empty() && !before.same_resources(after);
            ListsChanged {
                tools: self.entries.iter().any(|entry| {
                    before.tool(entry.name(), entry.effect())
                        != after.tool(entry.name(), entry.effect())
                }),
                resources: own_resources || provided,
                prompts: self
                    .prompts
                    .iter()
                    .any(|prompt| before.prompt(prompt.name()) != after.prompt(prompt.name())),
            }
        })
    }

    /// What is disabled now, by every source.
    pub fn disabled(&self) -> Arc<Disabled> {
        static NOTHING: std::sync::LazyLock<Arc<Disabled>> = std::sync::LazyLock::new(Arc::default);
        self.switch
            .disabled()
            .unwrap_or_else(|| Arc::clone(&NOTHING))
    }

    /// Hears the changes of the lists from now on: one listener per session that tells its
    /// client `notifications/*/list_changed`.
    pub fn changes(&self) -> CatalogChanges {
        self.switch.changes()
    }

    /// Every prompt registered, enabled or not, in registration order.
    pub fn prompts(&self) -> std::slice::Iter<'_, PromptEntry> {
        self.prompts.iter()
    }

    /// The prompt named exactly `name`, unless it is disabled.
    pub fn prompt(&self, name: &str) -> Option<&PromptEntry> {
        // Prompts are few: a scan beats a map's hashing and keeps the catalog small.
        self.prompts
            .iter()
            .find(|prompt| prompt.name() == name)
            .filter(|_| !self.switch.disables(|disabled| disabled.prompt(name)))
    }

    /// Every resource registered, fixed or templated, enabled or not, in registration order.
    pub fn resources(&self) -> std::slice::Iter<'_, ResourceEntry> {
        self.resources.iter()
    }

    /// The resource `uri` names, with the values its template's variables bound: a fixed URI
    /// first, then the templates in registration order. A URI longer than
    /// [`MAX_URI_LEN`](crate::MAX_URI_LEN) names none, and neither does a disabled URI, nor a
    /// disabled template.
    pub fn resolve_resource(
        &self,
        uri: &str,
    ) -> Option<(&ResourceEntry, Vec<(&'static str, String)>)> {
        if uri.len() > MAX_URI_LEN {
            return None;
        }
        let disabled = self.switch.disabled();
        let enabled = |uri: &str| disabled.as_ref().is_none_or(|off| !off.resource(uri));
        if !enabled(uri) {
            return None;
        }
        if let Some(&index) = self.fixed.get(uri) {
            return Some((&self.resources[index], Vec::new()));
        }
        self.resources
            .iter()
            .filter(|resource| resource.is_template() && enabled(resource.uri()))
            .find_map(|resource| Some((resource, resource.template().matches(uri)?)))
    }

    /// The resource template spelled exactly `template`, unless it is disabled.
    pub fn template(&self, template: &str) -> Option<&ResourceEntry> {
        self.resources
            .iter()
            .find(|resource| resource.is_template() && resource.uri() == template)
            .filter(|_| !self.switch.disables(|disabled| disabled.resource(template)))
    }

    /// Every resource provider, in registration order.
    pub fn providers(&self) -> std::slice::Iter<'_, ProviderEntry> {
        self.providers.iter()
    }

    /// The provider that answers `uri`: the first, in registration order, that claims it. Asked
    /// only for URIs [`resolve_resource`](Self::resolve_resource) does not match (the catalog's
    /// own resources come first). A URI longer than [`MAX_URI_LEN`](crate::MAX_URI_LEN) is
    /// nobody's, and so is a disabled one.
    pub fn resolve_provider(&self, uri: &str) -> Option<&ProviderEntry> {
        if uri.len() > MAX_URI_LEN || self.switch.disables(|disabled| disabled.resource(uri)) {
            return None;
        }
        self.providers.iter().find(|provider| provider.claims(uri))
    }

    /// Whether changes are reported, by the application or a provider (adapters offer
    /// subscriptions then).
    pub fn reports_resource_changes(&self) -> bool {
        self.watchers.reports_changes()
    }

    /// The tool named exactly `name` (names are case-sensitive), unless it is disabled.
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.registered(name).filter(|entry| {
            !self
                .switch
                .disables(|disabled| disabled.tool(entry.name(), entry.effect()))
        })
    }

    /// The tool registered as `name`, enabled or not: for what is already running, whose answer
    /// takes its shape from the tool (its output schema) whatever was disabled since.
    pub fn registered(&self, name: &str) -> Option<&ToolEntry> {
        self.by_name.get(name).map(|&index| &self.entries[index])
    }

    /// Every tool registered, enabled or not, in registration order.
    pub fn iter(&self) -> std::slice::Iter<'_, ToolEntry> {
        self.entries.iter()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the catalog is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'a> IntoIterator for &'a Catalog {
    type Item = &'a ToolEntry;
    type IntoIter = std::slice::Iter<'a, ToolEntry>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(ToolEntry::name))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_mcp() {
        assert!(is_valid_tool_name("search_products"));
        assert!(is_valid_tool_name("shop.v2-search"));
        assert!(is_valid_tool_name(&"a".repeat(128)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name(&"a".repeat(129)));
        assert!(!is_valid_tool_name("search products"));
        assert!(!is_valid_tool_name("séarch"));
        assert!(!is_valid_tool_name("a/b"));
    }
}
