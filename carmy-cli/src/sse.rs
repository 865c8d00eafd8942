//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp's client does not speak: `GET`
//! the URL for an event stream whose first event (`endpoint`) names where to `POST` messages;
//! the server's messages arrive on the stream as `message` events.
//!
//! The two halves become rmcp's sink-and-stream transport: the stream is the event stream's
//! messages; the sink posts each message and waits for the server to accept it, so a refused
//! `POST` (an expired session, a bad token) fails the request that sent it instead of leaving
//! it waiting for an answer that will never come.

use std::{io, pin::Pin};

use futures_util::{Sink, Stream, StreamExt, sink};
use reqwest::{
    Url,
    header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue},
};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use sse_stream::SseStream;

use crate::exit::Failure;

pub(crate) type Outgoing = Pin<Box<dyn Sink<ClientJsonRpcMessage, Error = io::Error> + Send>>;
pub(crate) type Incoming = Pin<Box<dyn Stream<Item = ServerJsonRpcMessage> + Send>>;

/// Opens the event stream at `url` with `headers` (and `bearer`), and waits for its endpoint.
pub(crate) async fn connect(
    url: &str,
    mut headers: HeaderMap,
    bearer: Option<&str>,
) -> Result<(Outgoing, Incoming), Failure> {
    let url = Url::parse(url).map_err(|error| Failure::Usage(format!("-s `{url}`: {error}")))?;
    if let Some(token) = bearer {
        let value = HeaderValue::try_from(format!("Bearer {token}"))
            .map_err(|error| Failure::Usage(format!("--bearer: {error}")))?;
        headers.insert(AUTHORIZATION, value);
    }
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .map_err(|error| Failure::Connect(format!("cannot build an HTTP client: {error}")))?;
    let response = client
        .get(url.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|error| Failure::Connect(format!("cannot reach {url}: {error}")))?;
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        return Err(Failure::Connect(format!(
            "{url} answered {status}: {}",
            crate::escape::field(body.trim())
        )));
    }
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let endpoint = loop {
        match events.next().await {
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                let data = event.data.unwrap_or_default();
                break url.join(data.trim()).map_err(|error| {
                    Failure::Connect(format!("the server's endpoint `{data}`: {error}"))
                })?;
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => {
                return Err(Failure::Connect(format!(
                    "the event stream failed: {error}"
                )));
            }
            None => {
                return Err(Failure::Connect(
                    "the event stream ended before naming its endpoint".to_owned(),
                ));
            }
        }
    };

    let incoming = events.filter_map(|event| async move {
        let event = event.ok()?;
        // An event without a name is a `message` by the SSE rules.
        if !matches!(event.event.as_deref(), None | Some("message")) {
            return None;
        }
        match serde_json::from_str(event.data.as_deref()?) {
            Ok(message) => Some(message),
            Err(error) => {
                let error = error.to_string();
                eprintln!(
                    "warning: ignoring a message the server sent: {}",
                    crate::escape::text(&error)
                );
                None
            }
        }
    });
    let outgoing = sink::unfold(
        (client, endpoint),
        |(client, endpoint), message: ClientJsonRpcMessage| async move {
            let body = serde_json::to_vec(&message).map_err(io::Error::other)?;
            let response = client
                .post(endpoint.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .map_err(io::Error::other)?;
            let status = response.status();
            if !status.is_success() {
                let body = response.text().await.unwrap_or_default();
                return Err(io::Error::other(format!(
                    "the server refused a message ({status}): {}",
                    body.trim()
                )));
            }
            Ok((client, endpoint))
        },
    );
    Ok((Box::pin(outgoing), Box::pin(incoming)))
}
