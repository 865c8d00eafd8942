//! Which catalog tools a caller may see and call: `Access` and `Caller` judge names and kinds;
//! these take a catalog entry, so they live above the catalog.

use crate::{access::Access, caller::Caller, catalog::ToolEntry, context::Context};

impl Access {
    /// Whether `tool` is allowed.
    pub fn allows(&self, tool: &ToolEntry) -> bool {
        self.allows_tool(tool.name(), tool.effect())
    }
}

impl Caller {
    /// Whether the caller may see and call `tool`: true unless an [`Access`] restriction
    /// leaves it out.
    pub fn allows_tool(&self, tool: &ToolEntry) -> bool {
        self.allows_tool_named(tool.name(), tool.effect())
    }
}

impl Context {
    /// Whether the caller may see and call `tool` ([`Caller::allows_tool`]).
    pub fn allows_tool(&self, tool: &ToolEntry) -> bool {
        self.caller().allows_tool(tool)
    }
}
