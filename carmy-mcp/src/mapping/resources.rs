//! `resources/list`, `resources/templates/list` and `resources/read`: catalog resources as MCP
//! `Resource`s and `ResourceTemplate`s, reads as `ReadResourceResult`s or JSON-RPC errors.

use base64::Engine as _;
use carmy_core::{
    AgentError, Body, Contents, ErrorCategory, Outcome, OutcomeKind, ProvidedResource,
    ResourceEntry,
};
use rmcp::model::{
    CacheScope, ErrorCode, ErrorData, ListResourceTemplatesResult, ListResourcesResult,
    ProtocolVersion, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};

use super::page::{self, Page};

/// How long clients may keep a list of resources (the catalog never changes while serving).
const LISTS_TTL_MS: u64 = 60_000;

/// How long clients may keep a list that holds providers' resources: not at all, since files
/// come and go (a client that listens hears of it; one that does not must ask again).
const PROVIDED_TTL_MS: u64 = 0;

/// The catalog's resources as MCP sees them, built once.
#[derive(Debug, Default)]
pub(crate) struct ResourceListing {
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
}

impl ResourceListing {
    pub(crate) fn new<'a>(entries: impl IntoIterator<Item = &'a ResourceEntry>) -> Self {
        let mut listing = Self::default();
        for entry in entries {
            if entry.is_template() {
                listing.templates.push(template(entry));
            } else {
                listing.resources.push(resource(entry));
            }
        }
        listing
    }

    /// Whether there is anything to list (the `resources` capability is declared then).
    pub(crate) fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty()
    }

    /// One page of the fixed resources, from `cursor`.
    pub(crate) fn resources(&self, cursor: Option<&str>) -> Result<ListResourcesResult, ErrorData> {
        let Page { items, next } = page::of(&self.resources, cursor)?;
        let mut result = ListResourcesResult::with_all_items(items)
            .with_ttl_ms(LISTS_TTL_MS)
            .with_cache_scope(CacheScope::Public);
        result.next_cursor = next;
        Ok(result)
    }

    /// One page of the fixed resources a caller may read (`visible`), from `cursor`: cacheable
    /// by that caller only.
    pub(crate) fn resources_for(
        &self,
        cursor: Option<&str>,
        visible: impl Fn(&str) -> bool,
    ) -> Result<ListResourcesResult, ErrorData> {
        let seen: Vec<Resource> = self
            .resources
            .iter()
            .filter(|resource| visible(&resource.uri))
            .cloned()
            .collect();
        let Page { items, next } = page::of(&seen, cursor)?;
        let mut result = ListResourcesResult::with_all_items(items)
            .with_ttl_ms(LISTS_TTL_MS)
            .with_cache_scope(CacheScope::Private);
        result.next_cursor = next;
        Ok(result)
    }

    /// One page of the fixed resources followed by `provided` (the providers' resources, in
    /// their order), from `cursor`; or the providers' failure: `-32602` for a bad request,
    /// `-32603` otherwise, with the `{"error": {...}}` envelope. The cursor is a position in
    /// the whole: a list that changed between two pages may repeat or skip an item, which the
    /// list-changed notification tells a listening client.
    pub(crate) fn resources_with(
        &self,
        provided: Result<Vec<ProvidedResource>, AgentError>,
        cursor: Option<&str>,
        visible: impl Fn(&str) -> bool,
    ) -> Result<ListResourcesResult, ErrorData> {
        let provided = provided.map_err(|error| {
            let code = if error.category() == ErrorCategory::Validation {
                ErrorCode::INVALID_PARAMS
            } else {
                ErrorCode::INTERNAL_ERROR
            };
            super::error::with_envelope(code, &error)
        })?;
        let all: Vec<Resource> = self
            .resources
            .iter()
            .cloned()
            .chain(provided.iter().map(provided_resource))
            .filter(|resource| visible(&resource.uri))
            .collect();
        let Page { items, next } = page::of(&all, cursor)?;
        let mut result = ListResourcesResult::with_all_items(items)
            .with_ttl_ms(PROVIDED_TTL_MS)
            .with_cache_scope(CacheScope::Private);
        result.next_cursor = next;
        Ok(result)
    }

    /// One page of the templates a caller may read from (`visible`, given each URI template),
    /// from `cursor`: cacheable by that caller only.
    pub(crate) fn templates_for(
        &self,
        cursor: Option<&str>,
        visible: impl Fn(&str) -> bool,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let seen: Vec<ResourceTemplate> = self
            .templates
            .iter()
            .filter(|template| visible(&template.uri_template))
            .cloned()
            .collect();
        let Page { items, next } = page::of(&seen, cursor)?;
        let mut result = ListResourceTemplatesResult::with_all_items(items)
            .with_ttl_ms(LISTS_TTL_MS)
            .with_cache_scope(CacheScope::Private);
        result.next_cursor = next;
        Ok(result)
    }

    /// One page of the templates, from `cursor`.
    pub(crate) fn templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let Page { items, next } = page::of(&self.templates, cursor)?;
        let mut result = ListResourceTemplatesResult::with_all_items(items)
            .with_ttl_ms(LISTS_TTL_MS)
            .with_cache_scope(CacheScope::Public);
        result.next_cursor = next;
        Ok(result)
    }
}

fn resource(entry: &ResourceEntry) -> Resource {
    let mut resource = Resource::new(entry.uri(), entry.name());
    if let Some(title) = entry.title() {
        resource = resource.with_title(title);
    }
    if !entry.description().is_empty() {
        resource = resource.with_description(entry.description());
    }
    if let Some(mime_type) = entry.mime_type() {
        resource = resource.with_mime_type(mime_type);
    }
    resource
}

/// A provider's resource as MCP's: what the provider said, its size included.
fn provided_resource(provided: &ProvidedResource) -> Resource {
    let mut resource = Resource::new(provided.uri(), provided.name());
    if let Some(title) = provided.title_text() {
        resource = resource.with_title(title);
    }
    if let Some(description) = provided.description_text() {
        resource = resource.with_description(description);
    }
    if let Some(mime_type) = provided.mime_type_of() {
        resource = resource.with_mime_type(mime_type);
    }
    if let Some(size) = provided.size_bytes() {
        resource = resource.with_size(size);
    }
    resource
}

fn template(entry: &ResourceEntry) -> ResourceTemplate {
    let mut template = ResourceTemplate::new(entry.uri(), entry.name());
    if let Some(title) = entry.title() {
        template = template.with_title(title);
    }
    if !entry.description().is_empty() {
        template = template.with_description(entry.description());
    }
    if let Some(mime_type) = entry.mime_type() {
        template = template.with_mime_type(mime_type);
    }
    template
}

/// The answer to `resources/read` of `uri`: the contents, or the error. A URI that names
/// nothing (or a resource that says it found nothing) is MCP's "resource not found": `-32002`
/// up to 2025-11-25, `-32602` from 2026-07-28; variables that break the resource's input, and a
/// URI the caller may not read (`RESOURCE_NOT_ALLOWED`), are `-32602`; any other failure
/// `-32603`. Each error carries the `{"error": {...}}` envelope.
pub(crate) fn read_result(
    uri: &str,
    entry: Option<&ResourceEntry>,
    outcome: Outcome<Contents>,
    version: Option<&ProtocolVersion>,
) -> Result<ReadResourceResult, ErrorData> {
    let error = match outcome.result {
        Ok(contents) => {
            // What a read returns may depend on who read it: cacheable by that principal only,
            // and only as long as the resource says.
            let fresh_for = entry.map_or(0, |entry| entry.fresh_for().as_millis());
            return Ok(ReadResourceResult::new(read_contents(uri, entry, contents))
                .with_ttl_ms(u64::try_from(fresh_for).unwrap_or(u64::MAX))
                .with_cache_scope(CacheScope::Private));
        }
        Err(error) => error,
    };
    let unroutable = outcome.kind == OutcomeKind::Unroutable;
    Err(read_error(&error, unroutable, version))
}

/// A read's failure (or a check's: the same answer for the same URI) as a JSON-RPC error, by
/// the rules of [`read_result`].
pub(crate) fn read_error(
    error: &AgentError,
    unroutable: bool,
    version: Option<&ProtocolVersion>,
) -> ErrorData {
    let not_found = unroutable || error.category() == ErrorCategory::NotFound;
    let code = if not_found {
        match version {
            Some(version) if *version >= ProtocolVersion::V_2026_07_28 => ErrorCode::INVALID_PARAMS,
            _ => ErrorCode::RESOURCE_NOT_FOUND,
        }
    } else if super::error::by_caller(error.category()) {
        ErrorCode::INVALID_PARAMS
    } else {
        ErrorCode::INTERNAL_ERROR
    };
    super::error::with_envelope(code, error)
}

/// Contents as MCP's: text as `text`, bytes as a base64 `blob`; each for the URI read unless it
/// names its own, of the resource's MIME type unless it has its own.
fn read_contents(
    uri: &str,
    entry: Option<&ResourceEntry>,
    contents: Contents,
) -> Vec<ResourceContents> {
    let declared = entry.and_then(ResourceEntry::mime_type);
    contents
        .into_vec()
        .into_iter()
        .map(|content| {
            let of = content.uri_of().unwrap_or(uri).to_owned();
            let mime_type = content.mime_type_of().or(declared).map(str::to_owned);
            let mapped = match content.body() {
                Body::Text(text) => ResourceContents::text(text.clone(), of),
                Body::Blob(bytes) => ResourceContents::blob(
                    base64::engine::general_purpose::STANDARD.encode(bytes),
                    of,
                ),
                _ => ResourceContents::text(String::new(), of),
            };
            match mime_type {
                Some(mime_type) => mapped.with_mime_type(mime_type),
                None => mapped,
            }
        })
        .collect()
}
