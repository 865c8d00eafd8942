//! CORS, for browser-based clients (the MCP Inspector's web UI, web agents): a page of an
//! allowed origin (the same list as the `Origin` check, [`HttpServer::allowed_origins`]) gets
//! its preflight answered and may send and read the MCP headers; a page of any other origin gets
//! no `Access-Control-Allow-*` headers (the browser then blocks it) and its requests are still
//! refused `403` by the `Origin` check. Credentials (cookies, TLS client certificates) are allowed
//! only when configured: bearer tokens travel in `Authorization` without them.
//!
//! [`HttpServer::allowed_origins`]: super::HttpServer::allowed_origins

use std::{sync::Arc, time::Duration};

use carmy_core::Catalog;
use http::{HeaderName, HeaderValue, Method, header, request::Parts};
use serde_json::Value;
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::checks::Allowed;

/// How long a browser may cache a preflight's answer.
const MAX_AGE: Duration = Duration::from_secs(600);

/// The headers MCP clients send besides the standard ones: sessions, the revision, the
/// 2026-07-28 routing headers, and resumption.
const MCP_REQUEST_HEADERS: &[&str] = &[
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
];

/// The headers a page's script may read from an answer: the session it was given, the
/// revision, an authentication challenge, and when to retry.
const EXPOSED: &[&str] = &[
    "mcp-session-id",
    "mcp-protocol-version",
    "www-authenticate",
    "retry-after",
];

/// The CORS layer for `allowed` origins, letting pages also send the `Mcp-Param-*` headers the
/// catalog's tools bind.
pub(super) fn layer(allowed: Allowed, catalog: &Catalog, credentials: bool) -> CorsLayer {
    let param_headers = param_headers(catalog);
    let allowed = Arc::new(allowed);
    let origin = AllowOrigin::predicate(move |origin: &HeaderValue, _: &Parts| {
        allowed.allows_origin(origin.as_bytes())
    });
    let names = |names: &mut dyn Iterator<Item = &str>| -> Vec<HeaderName> {
        names
            .filter_map(|name| HeaderName::try_from(name).ok())
            .collect()
    };
    let mut request_headers = vec![header::AUTHORIZATION, header::CONTENT_TYPE, header::ACCEPT];
    request_headers.extend(names(&mut MCP_REQUEST_HEADERS.iter().copied()));
    request_headers.extend(names(&mut param_headers.iter().map(String::as_str)));
    CorsLayer::new()
        .allow_origin(origin)
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers(request_headers)
        .expose_headers(names(&mut EXPOSED.iter().copied()))
        .allow_credentials(credentials)
        .max_age(MAX_AGE)
}

/// The `Mcp-Param-*` headers the tools bind (SEP-2243, 2026-07-28), each once: a property of an
/// input schema marked `"x-mcp-header": "Name"`, at any depth of `properties`, as rmcp reads the
/// marks when it checks these headers against the body.
fn param_headers(catalog: &Catalog) -> Vec<String> {
    fn marks(schema: &Value, names: &mut Vec<String>) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for property in properties.values() {
            if let Some(header) = property.get("x-mcp-header").and_then(Value::as_str) {
                names.push(format!("mcp-param-{}", header.to_ascii_lowercase()));
            }
            marks(property, names);
        }
    }
    let mut names = Vec::new();
    for entry in catalog.iter() {
        marks(entry.input_schema(), &mut names);
    }
    names.sort();
    names.dedup();
    names
}
