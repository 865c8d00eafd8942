//! `tools/list`: catalog entries as MCP `Tool`s, built once per server.
//!
//! The catalog's tools are registered once, so they are built once, in `McpServer::new`, and
//! every `tools/list` answer is one page of them, less those the catalog disables now, that
//! clients may cache until they hear `notifications/tools/list_changed`. Their schemas are
//! shared (`Arc`) with every answer.

use std::{collections::HashMap, sync::Arc};

use carmy_core::{Catalog, Effect, ToolEntry};
use rmcp::model::{CacheScope, JsonObject, ListToolsResult, MetaObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use super::{META_CONFIRMATION, META_EFFECT, META_PARALLEL_SAFE, META_TASK};

/// How long clients may keep `tools/list` (a change is told as it happens).
const TOOLS_TTL_MS: u64 = 60_000;

/// The catalog as MCP sees it.
#[derive(Debug)]
pub(crate) struct Listing {
    tools: Vec<Tool>,
    by_name: HashMap<&'static str, usize>,
}

impl Listing {
    pub(crate) fn new(catalog: &Catalog) -> Self {
        let by_name = catalog
            .iter()
            .enumerate()
            .map(|(index, entry)| (entry.name(), index))
            .collect();
        Self {
            tools: catalog.iter().map(tool).collect(),
            by_name,
        }
    }

    /// The tool named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&index| &self.tools[index])
    }

    /// The whole catalog as one page (there is no `nextCursor`), cacheable for a minute.
    pub(crate) fn result(&self) -> ListToolsResult {
        ListToolsResult::with_all_items(self.tools.clone())
            .with_ttl_ms(TOOLS_TTL_MS)
            .with_cache_scope(CacheScope::Public)
    }

    /// The tools whose names `visible` accepts, for one caller: cacheable by that caller only.
    pub(crate) fn result_for(&self, visible: impl Fn(&str) -> bool) -> ListToolsResult {
        let tools = self
            .tools
            .iter()
            .filter(|tool| visible(&tool.name))
            .cloned()
            .collect();
        ListToolsResult::with_all_items(tools)
            .with_ttl_ms(TOOLS_TTL_MS)
            .with_cache_scope(CacheScope::Private)
    }
}

/// One catalog entry as an MCP `Tool`.
pub(crate) fn tool(entry: &ToolEntry) -> Tool {
    let description = Some(entry.description())
        .filter(|description| !description.is_empty())
        .map(Into::into);
    let mut tool = Tool::new_with_raw(
        entry.name(),
        description,
        schema_object(entry.input_schema()),
    )
    .with_annotations(annotations(entry))
    .with_meta(tool_meta(entry));
    if let Some(title) = entry.title() {
        tool = tool.with_title(title);
    }
    // `structuredContent` must be an object: tools returning anything else answer in text only,
    // so they publish no output schema a client would check that text against.
    if entry.has_object_output() {
        tool = tool.with_raw_output_schema(schema_object(entry.output_schema()));
    }
    tool
}

/// Absent `destructiveHint` and `openWorldHint` mean `true` in MCP, so every hint is explicit.
fn annotations(entry: &ToolEntry) -> ToolAnnotations {
    let effect = entry.effect();
    let mut annotations = ToolAnnotations::new()
        .read_only(effect.is_read_only())
        .destructive(effect == Effect::Destructive)
        .idempotent(entry.idempotent())
        .open_world(effect == Effect::ExternalWrite);
    // Clients of 2025-03-26 read the title from the annotations only.
    annotations.title = entry.title().map(Into::into);
    annotations
}

fn tool_meta(entry: &ToolEntry) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.insert(META_EFFECT.into(), entry.effect().as_str().into());
    meta.insert(
        META_CONFIRMATION.into(),
        entry.confirmation().as_str().into(),
    );
    meta.insert(META_PARALLEL_SAFE.into(), entry.parallel_safe().into());
    // rmcp's `Tool` has no `execution` member (2025-11-25's `execution.taskSupport`): the
    // declaration travels in `_meta`, for every revision.
    meta.insert(META_TASK.into(), entry.task_support().as_str().into());
    meta
}

/// MCP carries schemas as JSON objects; the boolean schemas `true`/`false` get their object
/// spelling.
fn schema_object(schema: &Arc<Value>) -> Arc<JsonObject> {
    Arc::new(match &**schema {
        Value::Object(object) => object.clone(),
        Value::Bool(false) => json!({ "not": {} })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        _ => Map::new(),
    })
}
