//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp's client does not speak: `GET`
//! the URL for an event stream whose first event (`endpoint`) names where to `POST` messages;
//! the server's messages arrive on the stream as `message` events.
//!
//! The two halves become rmcp's sink-and-stream transport: the stream is the event stream's
//! messages; the sink posts each message and waits for the server to accept it, so a refused
//! `POST` (an expired session, a bad token) fails the request that sent it instead of leaving
//! it waiting for an answer that will never come.
//!
//! The endpoint must be on the event stream's origin (scheme, host and port), as the official
//! TypeScript SDK requires: every `POST` carries the `--bearer` token and the `--header`s, which
//! were given for the server `-s` names, not for wherever that server points.

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
                break endpoint(&url, &event.data.unwrap_or_default())?;
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

/// Where the `endpoint` event's `data` says to post, if it is on the origin of `stream`.
fn endpoint(stream: &Url, data: &str) -> Result<Url, Failure> {
    let shown = crate::escape::field(data.trim());
    let endpoint = stream
        .join(data.trim())
        .map_err(|error| Failure::Connect(format!("the server's endpoint `{shown}`: {error}")))?;
    if endpoint.origin() != stream.origin() {
        return Err(Failure::Connect(format!(
            "the server's endpoint `{shown}` is on another origin than {stream}: refused, so \
             that the token and the headers go nowhere else"
        )));
    }
    Ok(endpoint)
}

#[cfg(test)]
mod tests {
    use reqwest::Url;

    use super::endpoint;

    #[test]
    fn the_endpoint_is_on_the_streams_origin() {
        let stream = Url::parse("http://127.0.0.1:8080/sse").unwrap();
        for same in [
            "/messages?sessionId=1",
            "messages?sessionId=1",
            " http://127.0.0.1:8080/messages ",
        ] {
            assert_eq!(
                endpoint(&stream, same).unwrap().origin(),
                stream.origin(),
                "{same}"
            );
        }
        let default_port = Url::parse("http://example.com/sse").unwrap();
        assert!(endpoint(&default_port, "http://example.com:80/messages").is_ok());
        for other in [
            "http://127.0.0.1:8081/messages",
            "http://localhost:8080/messages",
            "https://127.0.0.1:8080/messages",
            "//evil.example/messages",
            "http://evil.example/messages",
        ] {
            assert!(endpoint(&stream, other).is_err(), "{other}");
        }
    }
}
