//! rmcp's streamable HTTP service, shared by every request instead of copied for each.
//!
//! axum clones a route's service for every request, and `StreamableHttpService`'s `call` clones
//! itself again into the future it returns: each clone copies its configuration, the allowed
//! hosts and origins among it, string by string. Behind an `Arc`, a request costs a reference
//! count; rmcp's `handle(&self)` does the work either way.

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{
    body::Body,
    response::{IntoResponse, Response},
};
use http::Request;
use rmcp::transport::streamable_http_server::StreamableHttpService;

use super::sessions::Sessions;
use crate::server::McpServer;

/// The service `transport/http/mod.rs` routes MCP's path to.
#[derive(Clone)]
pub(super) struct SharedService(Arc<StreamableHttpService<McpServer, Sessions>>);

impl SharedService {
    pub(super) fn new(service: StreamableHttpService<McpServer, Sessions>) -> Self {
        Self(Arc::new(service))
    }
}

impl tower_service::Service<Request<Body>> for SharedService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let service = Arc::clone(&self.0);
        Box::pin(async move { Ok(service.handle(request).await.into_response()) })
    }
}
